import { Readable } from 'node:stream';
import type { GenerationRequest } from '../domain/generation-request.js';
import { MODEL_A } from '../domain/models.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { GenerationResult } from '../generation/generation-service.js';
import type { StoredImages } from '../storage/stored-images.js';
import { base64Chunks } from '../support/base64-chunks.js';

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
 * The answer with `response_format: b64_json`, as a stream: every image is opened in storage
 * first (so a missing one is an error answer, not a cut one), then each is read and
 * base64-encoded chunk by chunk into the JSON text, one image after another. No image, and no
 * image's base64 text, is ever held whole.
 */
export async function b64ImagesResponse(
  request: GenerationRequest,
  result: GenerationResult,
  created: number,
  stored: StoredImages,
): Promise<Readable> {
  const opened = await Promise.all(result.imageUrls.map((url) => stored.open(url)));
  const streams = opened.filter((stream) => stream !== undefined);
  if (streams.length !== opened.length) {
    for (const stream of streams) stream.destroy();
    throw new GatewayError(
      'InternalError',
      'a generated image could not be read back from storage; quote the request id',
    );
  }
  const { usage, ...rest } = envelopeOf(request, result, created);
  const head = JSON.stringify(rest).slice(0, -1);
  async function* text(): AsyncGenerator<string> {
    try {
      yield `${head},"data":[`;
      for (const [index, stream] of streams.entries()) {
        yield `${index === 0 ? '' : ','}{"b64_json":"`;
        yield* base64Chunks(stream);
        yield '"}';
      }
      yield `],"usage":${JSON.stringify(usage)}}`;
    } finally {
      for (const stream of streams) stream.destroy();
    }
  }
  return Readable.from(text(), { objectMode: false });
}
