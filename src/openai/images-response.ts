import { Readable } from 'node:stream';
import type { GenerationRequest } from '../domain/generation-request.js';
import { MODEL_A } from '../domain/models.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { GenerationResult } from '../generation/generation-service.js';
import type { StoredImages } from '../storage/stored-images.js';
import { base64Chunks } from '../support/base64-chunks.js';
import { leaveErrorsToReaders } from '../support/stream-errors.js';

/** Our per-request usage in OpenAI's `usage`: images and size, and model A's token counts. */
export interface OpenAiUsage {
  image_count: number;
  width: number;
  height: number;
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
}

export interface OpenAiImagesResponse {
  created: number;
  data: { url: string }[];
  size: string;
  output_format: 'png';
  usage: OpenAiUsage;
}

type Envelope = Omit<OpenAiImagesResponse, 'data'>;

function envelopeOf(
  request: GenerationRequest,
  result: GenerationResult,
  created: number,
): Envelope {
  const usage: OpenAiUsage = {
    image_count: result.imageUrls.length,
    width: result.width,
    height: result.height,
  };
  if (request.model === MODEL_A) {
    usage.input_tokens = result.tokens.input;
    usage.output_tokens = result.tokens.output;
    usage.total_tokens = result.tokens.input + result.tokens.output;
  }
  return { created, size: `${result.width}x${result.height}`, output_format: 'png', usage };
}

/** The answer with `response_format: url`: our signed URLs, valid 24 hours. */
export function urlImagesResponse(
  request: GenerationRequest,
  result: GenerationResult,
  created: number,
): OpenAiImagesResponse {
  const { size, output_format, usage } = envelopeOf(request, result, created);
  return { created, size, output_format, data: result.imageUrls.map((url) => ({ url })), usage };
}

/**
 * Every image of a result opened in storage, for `b64ImagesResponse`: all of them or none (a
 * missing or unreadable one is a 500, and those already opened are closed), so that an answer is
 * an error answer rather than a cut one. The OpenAI route opens them before the request is
 * billed, so an image that cannot be read back is never paid for.
 */
export async function openImages(
  stored: StoredImages,
  urls: readonly string[],
): Promise<Readable[]> {
  const opened = await Promise.allSettled(urls.map((url) => stored.open(url)));
  const streams: Readable[] = [];
  for (const outcome of opened)
    if (outcome.status === 'fulfilled' && outcome.value !== undefined) {
      // Read one after another: a later image may fail while an earlier one is being read.
      leaveErrorsToReaders(outcome.value);
      streams.push(outcome.value);
    }
  if (streams.length === urls.length) return streams;
  for (const stream of streams) stream.destroy();
  const failure = opened.find((outcome) => outcome.status === 'rejected');
  const error = new GatewayError(
    'InternalError',
    'a generated image could not be read back from storage; quote the request id',
  );
  if (failure !== undefined) error.cause = failure.reason;
  throw error;
}

/**
 * The answer with `response_format: b64_json`, as a stream: each opened image is read and
 * base64-encoded chunk by chunk into the JSON text, one after another. No image, and no image's
 * base64 text, is ever held whole. Closing the images is the caller's, once the answer is over
 * however it ends: an answer given up in the middle of an image waits on that image until then.
 */
export function b64ImagesResponse(
  request: GenerationRequest,
  result: GenerationResult,
  created: number,
  images: readonly Readable[],
): Readable {
  const { usage, ...rest } = envelopeOf(request, result, created);
  const head = JSON.stringify(rest).slice(0, -1);
  async function* text(): AsyncGenerator<string> {
    yield `${head},"data":[`;
    for (const [index, image] of images.entries()) {
      yield `${index === 0 ? '' : ','}{"b64_json":"`;
      yield* base64Chunks(image);
      yield '"}';
    }
    yield `],"usage":${JSON.stringify(usage)}}`;
  }
  return Readable.from(text(), { objectMode: false });
}
