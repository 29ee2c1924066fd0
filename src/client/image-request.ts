/** A box `[x1, y1, x2, y2]` in the pixels of its image (docs/api.md §3.6). */
export type Box = [number, number, number, number];

/** One input image: a local file, an http(s) URL, a data URL or an `oss://` key, and its boxes. */
export interface InputImage {
  source: string;
  boxes: Box[];
}

export interface PaletteEntry {
  hex: string;
  ratio: string;
}

/** What `imagegate generate` asks for, whichever door carries it. */
export interface ImageRequest {
  model: string;
  prompt: string;
  images: InputImage[];
  size?: string;
  n?: number;
  seed?: number;
  sequential: boolean;
  palette?: PaletteEntry[];
  watermark: boolean;
}

/** `usage` as either door answers it: model A has `size`, model B and OpenAI width and height. */
export interface ImageUsage {
  image_count?: number;
  size?: string;
  width?: number;
  height?: number;
}

/** A finished generation: the images' URLs in order, the usage and the ids. */
export interface GenerationOutcome {
  requestId: string;
  taskId?: string;
  images: string[];
  usage: ImageUsage;
}

/** The `parameters` both doors share, by their DashScope names; absent flags stay absent. */
export function sharedParameters(request: ImageRequest): Record<string, unknown> {
  const parameters: Record<string, unknown> = {};
  if (request.size !== undefined) parameters.size = request.size;
  if (request.n !== undefined) parameters.n = request.n;
  if (request.seed !== undefined) parameters.seed = request.seed;
  if (request.sequential) parameters.enable_sequential = true;
  if (request.palette !== undefined) parameters.color_palette = request.palette;
  if (request.watermark) parameters.watermark = true;
  if (request.images.some((image) => image.boxes.length > 0))
    parameters.bbox_list = request.images.map((image) => image.boxes);
  return parameters;
}
