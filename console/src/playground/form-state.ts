/** What the playground's form holds, and the one request body it stands for. */

export const MODEL_A = 'gen-2.7-image-pro';
export const MODEL_B = 'txt-image-2.0-pro';

/** A box in the original image's pixels: [x1, y1, x2, y2]. */
export type Box = [number, number, number, number];

export interface InputImage {
  id: string;
  name: string;
  /** What the request names: `oss://<key>` of an upload, or a URL. */
  reference: string;
  /**
   * A blob: URL of the image, shown under the page's CSP: the caller's own file, or what the
   * gateway loaded from the URL (POST /console/api/preview).
   */
  preview: string;
  /** The image's size in its own pixels, which boxes are drawn in. */
  width: number;
  height: number;
  boxes: Box[];
}

export interface PaletteEntry {
  hex: string;
  ratio: string;
}

export interface FormState {
  /** The name the request carries: a model id or an alias. */
  model: string;
  /** Which model that name stands for. */
  modelId: string;
  prompt: string;
  images: InputImage[];
  usePalette: boolean;
  palette: PaletteEntry[];
  /** `default`, a preset such as `2K`, or `custom`. */
  sizeChoice: string;
  width: string;
  height: string;
  n: string;
  sequential: boolean;
  thinking: boolean;
  seed: string;
  watermark: boolean;
  negativePrompt: string;
  promptExtend: boolean;
  /** Stream the answer, or submit it as a task and poll it. */
  delivery: 'stream' | 'task';
}

export const INITIAL_STATE: FormState = {
  model: MODEL_A,
  modelId: MODEL_A,
  prompt: 'A lighthouse on a cliff at dawn, watercolour',
  images: [],
  usePalette: false,
  palette: [
    { hex: '#1D3557', ratio: '40.00%' },
    { hex: '#457B9D', ratio: '30.00%' },
    { hex: '#F1FAEE', ratio: '30.00%' },
  ],
  sizeChoice: '1K',
  width: '1024',
  height: '768',
  n: '1',
  sequential: false,
  thinking: true,
  seed: '',
  watermark: false,
  negativePrompt: '',
  promptExtend: true,
  delivery: 'stream',
};

type Json = Record<string, unknown>;

/**
 * The DashScope request body of the form. Fields left empty are left out, so the gateway's
 * defaults apply; nothing here decides what is valid: POST /console/api/validate does.
 */
export function requestBody(state: FormState): Json {
  const content: Json[] = state.images.map((image) => ({ image: image.reference }));
  content.push({ text: state.prompt });
  const parameters: Json = {};
  const size = sizeOf(state);
  if (size !== undefined) parameters.size = size;
  if (state.n.trim() !== '') parameters.n = numberOrText(state.n);
  if (state.seed.trim() !== '') parameters.seed = numberOrText(state.seed);
  if (state.watermark) parameters.watermark = true;
  if (state.modelId === MODEL_A) addModelAParameters(state, parameters);
  else {
    if (state.negativePrompt !== '') parameters.negative_prompt = state.negativePrompt;
    if (!state.promptExtend) parameters.prompt_extend = false;
  }
  return {
    model: state.model,
    input: { messages: [{ role: 'user', content }] },
    ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
  };
}

function addModelAParameters(state: FormState, parameters: Json): void {
  if (state.sequential) parameters.enable_sequential = true;
  if (!state.thinking) parameters.thinking_mode = false;
  if (state.usePalette) parameters.color_palette = state.palette;
  if (state.images.some((image) => image.boxes.length > 0))
    parameters.bbox_list = state.images.map((image) => image.boxes);
}

function sizeOf(state: FormState): string | undefined {
  if (state.sizeChoice === 'default') return undefined;
  if (state.sizeChoice !== 'custom') return state.sizeChoice;
  return `${state.width.trim()}*${state.height.trim()}`;
}

/** A whole number as a number; anything else as typed, for the validator to name. */
function numberOrText(text: string): number | string {
  return /^-?\d+$/.test(text.trim()) ? Number(text.trim()) : text.trim();
}

/** Whether the request names an upload: it then needs X-DashScope-OssResourceResolve. */
export function namesUploads(state: FormState): boolean {
  return state.images.some((image) => image.reference.startsWith('oss://'));
}

/** Unicode code points, as the gateway counts the prompt (a surrogate pair is one). */
export function codePoints(text: string): number {
  return [...text].length;
}
