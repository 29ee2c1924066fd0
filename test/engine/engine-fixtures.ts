import sharp from 'sharp';
import type { LoadedImage } from '../../src/domain/loaded-image.js';
import type { EngineJob, EngineOutput } from '../../src/engine/engine.js';
import type { PixelBox } from '../../src/engine/local/pixel-box.js';
import { outputSize } from '../../src/generation/output-size.js';
import { validateRequest } from '../../src/validate/validate-request.js';

export const MODEL_A = 'gen-2.7-image-pro';
export const MODEL_B = 'txt-image-2.0-pro';

/** Decoded RGB pixels of a PNG (or of anything sharp reads). */
export interface Pixels {
  width: number;
  height: number;
  data: Uint8Array;
}

type ContentItem = { text: string } | { image: string };

/** A request body with one text item after `images` placeholder image items. */
export function body(
  model: string,
  prompt: string,
  parameters: Record<string, unknown> = {},
  imageCount = 0,
): object {
  const images: ContentItem[] = Array.from({ length: imageCount }, () => ({
    image: 'https://images.example/input.png',
  }));
  return {
    model,
    input: { messages: [{ role: 'user', content: [...images, { text: prompt }] }] },
    parameters,
  };
}

/** An EngineJob as the pipeline builds it: validated request, loaded inputs, computed size. */
export function jobFor(
  requestBody: object,
  options: { inputs?: LoadedImage[]; seed?: number; signal?: AbortSignal } = {},
): EngineJob {
  const request = validateRequest(structuredClone(requestBody));
  const inputs = options.inputs ?? [];
  return {
    request,
    inputs,
    output: outputSize(request, inputs),
    seed: options.seed ?? 1234,
    requestId: 'test-request',
    signal: options.signal ?? new AbortController().signal,
  };
}

export function pngBytes(output: EngineOutput, index = 0): Buffer {
  const image = output.images[index];
  if (image?.kind !== 'png') throw new Error(`image ${index} is not a PNG`);
  return image.bytes;
}

export async function decode(bytes: Buffer): Promise<Pixels> {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`expected 3 channels, got ${info.channels}`);
  return { width: info.width, height: info.height, data };
}

/** `bytes` stretched to width x height, the way an engine is expected to read an input. */
export async function resized(bytes: Buffer, width: number, height: number): Promise<Pixels> {
  return decode(await sharp(bytes).resize(width, height, { fit: 'fill' }).png().toBuffer());
}

/**
 * A synthetic photo: smooth colour fields and blocks whose layout depends on `variant`, so two
 * variants are plainly unrelated pictures.
 */
export function syntheticPixels(width: number, height: number, variant: number): Pixels {
  const data = new Uint8Array(width * height * 3);
  const phase = variant * 1.7;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const offset = (y * width + x) * 3;
      const u = x / width;
      const v = y / height;
      const block = (Math.floor(u * (3 + variant)) + Math.floor(v * (2 + variant))) % 2;
      data[offset] = Math.round(127 + 120 * Math.sin(u * 5 + phase));
      data[offset + 1] = Math.round(127 + 120 * Math.cos(v * 4 - phase));
      data[offset + 2] = block === 0 ? 40 + variant * 30 : 220 - variant * 30;
    }
  }
  return { width, height, data };
}

export async function encodeAs(pixels: Pixels, format: 'png' | 'jpeg' | 'webp'): Promise<Buffer> {
  const image = sharp(pixels.data, {
    raw: { width: pixels.width, height: pixels.height, channels: 3 },
  });
  if (format === 'png') return image.png().toBuffer();
  if (format === 'jpeg') return image.jpeg({ quality: 92 }).toBuffer();
  return image.webp({ quality: 90 }).toBuffer();
}

export function loadedImage(
  bytes: Buffer,
  format: LoadedImage['format'],
  width: number,
  height: number,
  index = 0,
): LoadedImage {
  return {
    path: `input.messages[0].content[${index}].image`,
    format,
    width,
    height,
    bytes: () => bytes,
  };
}

/** A synthetic photo encoded and wrapped as the inputs stage would hand it over. */
export async function syntheticInput(
  width: number,
  height: number,
  variant: number,
  format: 'png' | 'jpeg' | 'webp' = 'png',
  index = 0,
): Promise<LoadedImage> {
  const bytes = await encodeAs(syntheticPixels(width, height, variant), format);
  return loadedImage(bytes, format, width, height, index);
}

export function contains(box: PixelBox, x: number, y: number): boolean {
  return x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height;
}

/** Mean absolute channel difference over the pixels `include` accepts (all by default). */
export function meanAbsoluteDifference(
  a: Pixels,
  b: Pixels,
  include: (x: number, y: number) => boolean = () => true,
): number {
  if (a.width !== b.width || a.height !== b.height) throw new Error('sizes differ');
  let sum = 0;
  let count = 0;
  for (let y = 0; y < a.height; y++) {
    for (let x = 0; x < a.width; x++) {
      if (!include(x, y)) continue;
      const offset = (y * a.width + x) * 3;
      for (let channel = 0; channel < 3; channel++) {
        sum += Math.abs(a.data[offset + channel]! - b.data[offset + channel]!);
      }
      count += 3;
    }
  }
  return count === 0 ? 0 : sum / count;
}

/** Largest channel difference over the pixels `include` accepts. */
export function maxAbsoluteDifference(
  a: Pixels,
  b: Pixels,
  include: (x: number, y: number) => boolean = () => true,
): number {
  let max = 0;
  for (let y = 0; y < a.height; y++) {
    for (let x = 0; x < a.width; x++) {
      if (!include(x, y)) continue;
      const offset = (y * a.width + x) * 3;
      for (let channel = 0; channel < 3; channel++) {
        max = Math.max(max, Math.abs(a.data[offset + channel]! - b.data[offset + channel]!));
      }
    }
  }
  return max;
}

/** Pixel counts by `#RRGGBB` over the pixels `include` accepts. */
export function colourCounts(
  pixels: Pixels,
  include: (x: number, y: number) => boolean = () => true,
): Map<string, number> {
  const byValue = new Map<number, number>();
  for (let y = 0; y < pixels.height; y++) {
    for (let x = 0; x < pixels.width; x++) {
      if (!include(x, y)) continue;
      const offset = (y * pixels.width + x) * 3;
      const value =
        (pixels.data[offset]! << 16) | (pixels.data[offset + 1]! << 8) | pixels.data[offset + 2]!;
      byValue.set(value, (byValue.get(value) ?? 0) + 1);
    }
  }
  const counts = new Map<string, number>();
  for (const [value, count] of byValue) {
    counts.set(`#${value.toString(16).padStart(6, '0').toUpperCase()}`, count);
  }
  return counts;
}
