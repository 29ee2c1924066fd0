import type { GenerationRequest, PixelSize } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';
import { MODEL_A } from '../domain/models.js';

const PRESET_SIDE = { '1K': 1024, '2K': 2048, '4K': 4096 } as const;
const MODEL_B_DEFAULT_SIDE = 2048;
/** Computed sizes are rounded to this multiple, as image models expect; totals stay within ~1%. */
const SIZE_STEP = 8;

/**
 * The output size the size rules give (docs/api.md §5.5): custom sizes exactly; presets
 * and model B's edit default at about their pixel total, square without input images and in the
 * last input image's aspect ratio with them.
 */
export function outputSize(request: GenerationRequest, inputs: readonly LoadedImage[]): PixelSize {
  const last = inputs.at(-1);
  if (request.model === MODEL_A) {
    const size = request.parameters.size;
    if (size.kind === 'custom') return { width: size.width, height: size.height };
    return fitAspect(PRESET_SIDE[size.preset], last);
  }
  return request.parameters.size ?? fitAspect(MODEL_B_DEFAULT_SIDE, last);
}

function fitAspect(side: number, like: PixelSize | undefined): PixelSize {
  if (like === undefined) return { width: side, height: side };
  const total = side * side;
  const ratio = like.width / like.height;
  const round = (value: number) => Math.max(SIZE_STEP, Math.round(value / SIZE_STEP) * SIZE_STEP);
  return { width: round(Math.sqrt(total * ratio)), height: round(Math.sqrt(total / ratio)) };
}
