import type {
  GenerationMode,
  InputImage,
  ModelBParameters,
  PixelSize,
} from '../domain/generation-request.js';
import { invalidParameter } from '../errors/gateway-error.js';
import { truncateCodePoints } from './code-points.js';
import { customSizeProblem, parseCustomSize } from './sizes.js';
import { echoQuoted } from '../errors/echo.js';

export const MODEL_B_MAX_IMAGES = 3;
export const MAX_NEGATIVE_PROMPT_CODE_POINTS = 500;

export interface ModelBParametersInput {
  n?: number;
  negative_prompt?: string;
  prompt_extend?: boolean;
  watermark?: boolean;
  size?: string;
  seed?: number;
}

export function readModelBParameters(
  raw: ModelBParametersInput,
  images: readonly InputImage[],
): { parameters: ModelBParameters; mode: GenerationMode } {
  const parameters: ModelBParameters = {
    n: raw.n ?? 1,
    negativePrompt:
      raw.negative_prompt === undefined
        ? undefined
        : truncateCodePoints(raw.negative_prompt, MAX_NEGATIVE_PROMPT_CODE_POINTS).text,
    promptExtend: raw.prompt_extend ?? true,
    watermark: raw.watermark ?? false,
    size: raw.size === undefined ? undefined : readSize(raw.size),
    seed: raw.seed,
  };
  return { parameters, mode: images.length > 0 ? 'image-to-image' : 'text-to-image' };
}

function readSize(text: string): PixelSize {
  const size = parseCustomSize(text);
  if (size === undefined) {
    throw invalidParameter('parameters.size', `must be <width>*<height>, got ${echoQuoted(text)}`);
  }
  const problem = customSizeProblem(size, 512, 2048, '');
  if (problem !== undefined) throw invalidParameter('parameters.size', problem);
  return size;
}
