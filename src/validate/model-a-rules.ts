import type {
  BoundingBox,
  GenerationMode,
  InputImage,
  ModelAParameters,
  ModelASize,
} from '../domain/generation-request.js';
import { invalidParameter } from '../errors/gateway-error.js';
import { readPalette } from './palette.js';
import { customSizeProblem, parseCustomSize } from './sizes.js';
import { echoQuoted } from '../errors/echo.js';

export const MODEL_A_MAX_IMAGES = 9;
const NORMAL_MAX_N = 4;
const SEQUENTIAL_MAX_N = 12;

/** The parameters object of model A after the schema check: types are known, relations are not. */
export interface ModelAParametersInput {
  bbox_list?: number[][][];
  enable_sequential?: boolean;
  size?: string;
  n?: number;
  thinking_mode?: boolean;
  color_palette?: { hex: string; ratio: string }[];
  watermark?: boolean;
  seed?: number;
}

export function readModelAParameters(
  raw: ModelAParametersInput,
  images: readonly InputImage[],
): { parameters: ModelAParameters; mode: GenerationMode } {
  const sequential = raw.enable_sequential ?? false;
  const textToImage = images.length === 0 && !sequential;

  if (raw.color_palette !== undefined && sequential) {
    throw invalidParameter(
      'parameters.color_palette',
      'is available only when parameters.enable_sequential is false',
    );
  }
  const maxN = sequential ? SEQUENTIAL_MAX_N : NORMAL_MAX_N;
  if (raw.n !== undefined && raw.n > maxN) {
    throw invalidParameter(
      'parameters.n',
      `must be between 1 and ${maxN} ${sequential ? 'in sequential mode' : 'in normal mode'}`,
    );
  }
  const bboxList =
    raw.bbox_list === undefined ? undefined : readBboxList(raw.bbox_list, images.length);
  const parameters: ModelAParameters = {
    sequential,
    size: readSize(raw.size ?? '2K', textToImage),
    n: raw.n ?? (sequential ? SEQUENTIAL_MAX_N : 1),
    thinkingMode: (raw.thinking_mode ?? true) && textToImage,
    colorPalette:
      raw.color_palette === undefined
        ? undefined
        : readPalette(raw.color_palette, 'parameters.color_palette'),
    watermark: raw.watermark ?? false,
    seed: raw.seed,
    bboxList,
  };
  return { parameters, mode: modeOf(parameters, images.length) };
}

function modeOf(parameters: ModelAParameters, imageCount: number): GenerationMode {
  if (parameters.sequential) return 'sequential';
  if (parameters.bboxList?.some((boxes) => boxes.length > 0)) return 'interactive-edit';
  return imageCount > 0 ? 'image-to-image' : 'text-to-image';
}

function readSize(text: string, textToImage: boolean): ModelASize {
  if (text === '1K' || text === '2K' || text === '4K') {
    if (text === '4K' && !textToImage) {
      throw invalidParameter(
        'parameters.size',
        '4K is available only for text-to-image (no input image and enable_sequential false); use 1K or 2K',
      );
    }
    return { kind: 'preset', preset: text };
  }
  const custom = parseCustomSize(text);
  if (custom === undefined) {
    throw invalidParameter(
      'parameters.size',
      `must be a preset (1K, 2K, 4K) or <width>*<height>, got ${echoQuoted(text)}`,
    );
  }
  const problem = textToImage
    ? customSizeProblem(custom, 768, 4096, ' for text-to-image')
    : customSizeProblem(custom, 768, 2048, ' with input images or sequential mode');
  if (problem !== undefined) throw invalidParameter('parameters.size', problem);
  return { kind: 'custom', ...custom };
}

function readBboxList(raw: number[][][], imageCount: number): BoundingBox[][] {
  if (imageCount === 0) {
    throw invalidParameter('parameters.bbox_list', 'requires input images');
  }
  if (raw.length !== imageCount) {
    throw invalidParameter(
      'parameters.bbox_list',
      `must have one entry per input image (${imageCount}), got ${raw.length}`,
    );
  }
  return raw.map((boxes, imageIndex) =>
    boxes.map((box, boxIndex) => {
      const [x1, y1, x2, y2] = box as [number, number, number, number];
      if (!(x1 < x2 && y1 < y2)) {
        throw invalidParameter(
          `parameters.bbox_list[${imageIndex}][${boxIndex}]`,
          `must have x1 < x2 and y1 < y2, got [${box.join(', ')}]`,
        );
      }
      return [x1, y1, x2, y2] as const;
    }),
  );
}
