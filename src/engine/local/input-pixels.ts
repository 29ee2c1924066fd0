import sharp, { type Sharp } from 'sharp';
import type { BoundingBox, PixelSize } from '../../domain/generation-request.js';
import type { ImageFacts } from '../../domain/loaded-image.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { decodeBmp } from './bmp-decoder.js';
import type { Rgb } from './colour.js';
import { mapBoxToOutput } from './pixel-box.js';
import type { RgbCanvas } from './rgb-canvas.js';

/** An input image with its bytes at hand, as a worker thread reads it. */
export type InputWithBytes = ImageFacts & { bytes: Buffer };

/** An input image's pixels, ready to open as sharp pipelines, and the size they start at. */
interface PixelSource {
  size: PixelSize;
  open(): Sharp;
}

/**
 * The image's pixels. BMP goes through our own decoder (libvips has none), box-shrunk while
 * decoding by `shrink`, so a BMP declaring a huge picture costs what its use needs; libvips
 * shrinks JPEG and WEBP on load by itself. No EXIF auto-orientation: box coordinates and the
 * size rules use the stored orientation, so the pixels must too. Alpha (possible in WEBP) is
 * flattened onto white.
 */
function pixelSource(image: InputWithBytes, shrink: number): PixelSource {
  if (image.format !== 'bmp') {
    return { size: image, open: () => sharp(image.bytes).flatten({ background: '#ffffff' }) };
  }
  const bitmap = decodeBmp(image.bytes, shrink);
  const raw = { width: bitmap.width, height: bitmap.height, channels: 3 } as const;
  return { size: bitmap, open: () => sharp(bitmap.data, { raw }) };
}

/** The largest whole factor `size` can shrink by and stay at least `needed` on both axes. */
function wholeShrink(size: PixelSize, needed: PixelSize): number {
  const factor = Math.min(size.width / needed.width, size.height / needed.height);
  return Math.max(1, Math.floor(factor));
}

async function rawRgb(pipeline: Sharp): Promise<RgbCanvas> {
  const { data, info } = await pipeline
    .toColourspace('srgb')
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`decoded to ${info.channels} channels, expected 3`);
  return { width: info.width, height: info.height, data };
}

/** Decode failures are the caller's image, not our bug: InvalidImage naming the item. */
async function decoded<T>(image: InputWithBytes, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new GatewayError('InvalidImage', `${image.path}: image could not be decoded (${reason})`);
  }
}

/** The image stretched to exactly `size` (each axis on its own, so boxes map by plain scaling). */
export function resizedInput(image: InputWithBytes, size: PixelSize): Promise<RgbCanvas> {
  return decoded(image, () =>
    rawRgb(
      pixelSource(image, wholeShrink(image, size))
        .open()
        .resize(size.width, size.height, { fit: 'fill' }),
    ),
  );
}

const SAMPLE_SIDE = 4;

/**
 * The most vivid colour of a reference image (one of the inputs before the last), or of its
 * boxes when it has any: the images a caller adds for reference lend the output their colours.
 */
export function referenceColour(
  image: InputWithBytes,
  boxes: readonly BoundingBox[],
): Promise<Rgb> {
  return decoded(image, async () => {
    const sample = { width: SAMPLE_SIDE, height: SAMPLE_SIDE };
    const shrink = Math.min(
      wholeShrink(image, sample),
      ...boxes.map(([x1, y1, x2, y2]) => wholeShrink({ width: x2 - x1, height: y2 - y1 }, sample)),
    );
    const source = pixelSource(image, shrink);
    // Without boxes, no extract: that lets libvips shrink JPEG and WEBP while decoding.
    const pipelines =
      boxes.length === 0
        ? [source.open()]
        : boxes.map((box) => {
            const { x, y, width, height } = mapBoxToOutput(box, image, source.size);
            return source.open().extract({ left: x, top: y, width, height });
          });
    const samples: Rgb[] = [];
    for (const pipeline of pipelines) {
      const { data } = await rawRgb(pipeline.resize(SAMPLE_SIDE, SAMPLE_SIDE, { fit: 'fill' }));
      for (let offset = 0; offset + 2 < data.length; offset += 3) {
        samples.push({ r: data[offset]!, g: data[offset + 1]!, b: data[offset + 2]! });
      }
    }
    return mostVivid(samples);
  });
}

function mostVivid(samples: readonly Rgb[]): Rgb {
  let best: Rgb = { r: 128, g: 128, b: 128 };
  let bestScore = -1;
  for (const sample of samples) {
    const high = Math.max(sample.r, sample.g, sample.b);
    const low = Math.min(sample.r, sample.g, sample.b);
    const score = (high - low) * 2 + high;
    if (score > bestScore) {
      best = sample;
      bestScore = score;
    }
  }
  return best;
}
