import type { MODEL_A, MODEL_B } from './models.js';

/**
 * An input image as the caller gave it: a URL or data URL, whose bytes the inputs stage loads;
 * the bytes of a file uploaded with the request (`upload`, the OpenAI edits route); or `oss`, a
 * file uploaded earlier through the gateway's upload protocol (`oss://<key>`, docs/api.md §12).
 */
export type ImageSource =
  | { kind: 'url'; url: string }
  | { kind: 'data'; declaredMime: string; base64: string }
  | { kind: 'upload'; bytes: Buffer }
  | { kind: 'oss'; key: string };

export interface InputImage {
  /** JSON path of the item, e.g. `input.messages[0].content[2].image`, for error messages. */
  path: string;
  source: ImageSource;
}

export interface Prompt {
  text: string;
  /** True when the caller's text was longer than the limit and was cut. */
  truncated: boolean;
}

export interface PixelSize {
  width: number;
  height: number;
}

export type ModelASize =
  { kind: 'preset'; preset: '1K' | '2K' | '4K' } | ({ kind: 'custom' } & PixelSize);

/** [x1, y1, x2, y2] in absolute pixels of its image, origin top-left. */
export type BoundingBox = readonly [number, number, number, number];

export interface PaletteColor {
  /** `#RRGGBB`, upper-cased. */
  hex: string;
  /** Share of the image in hundredths of a percent: `12.50%` is 1250; all entries sum to 10000. */
  basisPoints: number;
}

export type GenerationMode = 'text-to-image' | 'image-to-image' | 'interactive-edit' | 'sequential';

export interface ModelAParameters {
  sequential: boolean;
  size: ModelASize;
  n: number;
  /** Whether thinking mode is in effect: asked for (default true) and allowed by the mode. */
  thinkingMode: boolean;
  colorPalette: PaletteColor[] | undefined;
  watermark: boolean;
  seed: number | undefined;
  /** One entry per input image, in order; an empty entry leaves that image unedited. */
  bboxList: BoundingBox[][] | undefined;
}

export interface ModelBParameters {
  n: number;
  negativePrompt: string | undefined;
  promptExtend: boolean;
  watermark: boolean;
  /** Undefined means the default, which for edits depends on the last input image. */
  size: PixelSize | undefined;
  seed: number | undefined;
}

/** How the caller wants the answer delivered: one JSON body, or Server-Sent Events. */
export interface AnswerOptions {
  /** `parameters.stream`: answer as an event stream (the request's headers may also ask). */
  stream: boolean;
  /** `parameters.incremental_output`: in a stream, each image in its own event where it can be. */
  incrementalOutput: boolean;
}

interface RequestCommon {
  prompt: Prompt;
  images: InputImage[];
  mode: GenerationMode;
  answer: AnswerOptions;
}

export interface ModelARequest extends RequestCommon {
  model: typeof MODEL_A;
  parameters: ModelAParameters;
}

export interface ModelBRequest extends RequestCommon {
  model: typeof MODEL_B;
  parameters: ModelBParameters;
}

export type GenerationRequest = ModelARequest | ModelBRequest;

/** The most images a request may produce, reserved against quota before any engine runs. */
export function maxImagesOf(request: GenerationRequest): number {
  return request.parameters.n;
}
