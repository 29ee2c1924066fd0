import { type ApiKey, redactKeys } from '../../domain/api-key.js';
import type { PixelSize } from '../../domain/generation-request.js';
import type { ImageFormat } from '../../domain/loaded-image.js';
import type { EngineJob, ProducedImage } from '../../engine/engine.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { type AttemptResult, failure, type UpstreamOutput } from '../attempt-result.js';
import { arrayAt, excerpt, objectAt, stringAt, tokensAt } from '../json-fields.js';
import { pngSize } from '../png-size.js';
import type { MultipartPart } from './multipart.js';

export const GENERATIONS_PATH = '/v1/images/generations';
export const EDITS_PATH = '/v1/images/edits';

/**
 * The accepted size closest to `target`: the nearest aspect ratio first (a wrong shape is worse
 * than a wrong resolution), then the nearest pixel count. Both compared on a log scale.
 */
export function closestSize(target: PixelSize, accepted: readonly PixelSize[]): PixelSize {
  const aspect = (size: PixelSize) =>
    Math.abs(Math.log(size.width / size.height / (target.width / target.height)));
  const pixels = (size: PixelSize) =>
    Math.abs(Math.log((size.width * size.height) / (target.width * target.height)));
  let best: PixelSize | undefined;
  for (const size of accepted) {
    if (best === undefined) {
      best = size;
      continue;
    }
    const aspectGap = aspect(size) - aspect(best);
    if (aspectGap < -1e-9 || (Math.abs(aspectGap) <= 1e-9 && pixels(size) < pixels(best)))
      best = size;
  }
  if (best === undefined) throw new RangeError('no accepted sizes');
  return best;
}

export function sizeText(size: PixelSize): string {
  return `${size.width}x${size.height}`;
}

export interface OpenAiRequestOptions {
  upstreamModel: string;
  size: PixelSize;
  sendResponseFormat: boolean;
}

/**
 * The parameters both endpoints take. OpenAI has no seed, negative prompt, prompt rewriting or
 * thinking mode: those are hints to model A/B and are not forwarded (docs/channels.md).
 */
function commonFields(
  job: EngineJob,
  options: OpenAiRequestOptions,
): Record<string, string | number> {
  return {
    model: options.upstreamModel,
    prompt: job.request.prompt.text,
    n: job.request.parameters.n,
    size: sizeText(options.size),
    ...(options.sendResponseFormat ? { response_format: 'b64_json' } : {}),
  };
}

/** JSON body of `/v1/images/generations` (text-to-image). */
export function generationsBody(
  job: EngineJob,
  options: OpenAiRequestOptions,
): Record<string, string | number> {
  return commonFields(job, options);
}

const MIME: Record<ImageFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  bmp: 'image/bmp',
  webp: 'image/webp',
};

/** Multipart parts of `/v1/images/edits`: one `image` file, or several as `image[]`. */
export function editsParts(job: EngineJob, options: OpenAiRequestOptions): MultipartPart[] {
  const fields = Object.entries(commonFields(job, options)).map(([name, value]) => ({
    name,
    value: String(value),
  }));
  const fieldName = job.inputs.length === 1 ? 'image' : 'image[]';
  const files = job.inputs.map((input, index) => ({
    name: fieldName,
    filename: `image-${index + 1}.${input.format === 'jpeg' ? 'jpg' : input.format}`,
    contentType: MIME[input.format],
    data: input.bytes(),
  }));
  return [...fields, ...files];
}

/** `{data: [{b64_json} | {url}], usage?}`: PNG bytes or remote URLs, in order. */
export function readOpenAiOutput(
  body: unknown,
  requestedSize: PixelSize,
): { ok: true; output: UpstreamOutput } | { ok: false; problem: string } {
  const data = arrayAt(body, 'data');
  if (data === undefined) return { ok: false, problem: 'answer has no data' };
  const images: ProducedImage[] = [];
  for (const item of data) {
    const encoded = stringAt(item, 'b64_json');
    const url = stringAt(item, 'url');
    if (encoded !== undefined) images.push({ kind: 'png', bytes: Buffer.from(encoded, 'base64') });
    else if (url !== undefined) images.push({ kind: 'upstream', url });
  }
  if (images.length === 0) return { ok: false, problem: 'answer holds no images' };
  const first = images[0];
  const size = (first?.kind === 'png' ? pngSize(first.bytes) : undefined) ?? requestedSize;
  if (images.some((image) => image.kind === 'png' && pngSize(image.bytes) === undefined))
    return { ok: false, problem: 'answer holds an image that is not a PNG' };
  const usage = objectAt(body, 'usage');
  return {
    ok: true,
    output: {
      images,
      width: size.width,
      height: size.height,
      ...tokensAt(usage),
    },
  };
}

const MODERATION_CODES = new Set(['content_policy_violation', 'moderation_blocked']);

/** What an OpenAI error answer (`{error: {message, type, code, param}}`) means for routing. */
export function classifyOpenAiError(
  status: number,
  body: unknown,
  rawText: string,
  key: ApiKey | undefined,
  retryAfterMs?: number,
): AttemptResult {
  const error = objectAt(body, 'error');
  const code = stringAt(error, 'code') ?? stringAt(error, 'type') ?? '';
  const message = redactKeys(excerpt(stringAt(error, 'message') ?? rawText, 500), key);
  const label = `HTTP ${status}${code === '' ? '' : ` ${code}`}${message === '' ? '' : `: ${message}`}`;
  const retry = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (status === 401 || status === 403) return failure('key-rejected', `key rejected (${label})`);
  if (status === 429) return failure('throttled', `throttled (${label})`, retry);
  if (status >= 500)
    return failure('server-error', label, {
      category: status === 503 || status === 504 ? 'unavailable' : 'upstream-error',
      ...retry,
    });
  if (status === 404 || code === 'model_not_found')
    return failure('error-body', `upstream does not know the model or path (${label})`);
  if (stringAt(error, 'param') === 'response_format')
    // Our channel configuration, not the caller's request: OpenAI's gpt-image models reject it.
    return failure(
      'error-body',
      `upstream rejects response_format; set send_response_format: false (${label})`,
    );
  if (status === 400 || status === 422) {
    const callerError = MODERATION_CODES.has(code)
      ? new GatewayError('DataInspectionFailed', message === '' ? code : message)
      : new GatewayError('InvalidParameter', message === '' ? code : message);
    return failure('rejected', `request refused (${label})`, { callerError });
  }
  return failure('error-body', label);
}
