import { type ApiKey, redactKeys } from '../../domain/api-key.js';
import type {
  GenerationRequest,
  ModelASize,
  PaletteColor,
} from '../../domain/generation-request.js';
import type { LoadedImage } from '../../domain/loaded-image.js';
import { MODEL_A } from '../../domain/models.js';
import type { EngineJob, ProducedImage } from '../../engine/engine.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { type AttemptResult, failure, type UpstreamOutput } from '../attempt-result.js';
import {
  arrayAt,
  countAt,
  excerpt,
  isObject,
  type JsonObject,
  objectAt,
  stringAt,
  tokensAt,
} from '../json-fields.js';
import { type StreamedBody, streamedJson, VerbatimJsonString } from '../streamed-json.js';

export const SYNC_PATH = '/api/v1/services/aigc/multimodal-generation/generation';
export const ASYNC_PATH = '/api/v1/services/aigc/image-generation/generation';
export const taskPath = (taskId: string) => `/api/v1/tasks/${encodeURIComponent(taskId)}`;
export const cancelPath = (taskId: string) => `${taskPath(taskId)}/cancel`;

type ContentItem<DataImage> = { text: string } | { image: string | DataImage };

export interface DashScopeBody<DataImage = string> {
  model: string;
  input: { messages: [{ role: 'user'; content: ContentItem<DataImage>[] }] };
  parameters: JsonObject;
}

/**
 * The upstream body, rebuilt from the validated request rather than copied from the caller: the
 * prompt is the truncated one, defaults are explicit, and the seed is the one the gateway decided,
 * so what runs upstream is exactly what was validated. URL images are forwarded as URLs (the
 * upstream fetches them); data images keep the caller's base64 under the MIME type sniffed from
 * the bytes; files (an OpenAI multipart `upload`, a DashScope `oss://` upload) live with us, which
 * the upstream cannot read, so their bytes go along as data URLs.
 */
export function dashScopeBody(job: EngineJob, upstreamModel: string): DashScopeBody {
  return bodyOf(job, upstreamModel, (mime, base64) => `data:${mime};base64,${base64}`);
}

/**
 * The bytes of JSON.stringify(dashScopeBody(job, upstreamModel)), made a chunk at a time: the
 * data URLs of checked images (up to nine of 27 MB) are never copied whole. Their base64 passed
 * the inputs stage's strict check, so it needs no JSON escaping.
 */
export function dashScopeBodyBytes(job: EngineJob, upstreamModel: string): Buffer | StreamedBody {
  return streamedJson(
    bodyOf(job, upstreamModel, (mime, base64, checked) =>
      checked
        ? new VerbatimJsonString([`data:${mime};base64,`, base64])
        : `data:${mime};base64,${base64}`,
    ),
  );
}

/** `checked`: the inputs stage loaded the image, so its base64 is strictly checked. */
type DataUrlOf<DataImage> = (mime: string, base64: string, checked: boolean) => DataImage;

function bodyOf<DataImage>(
  job: EngineJob,
  upstreamModel: string,
  dataUrl: DataUrlOf<DataImage>,
): DashScopeBody<DataImage> {
  const request = job.request;
  const images: ContentItem<DataImage>[] = request.images.map((image, index) => {
    const { source } = image;
    if (source.kind === 'url') return { image: source.url };
    const loaded = job.inputs[index];
    if (source.kind === 'data')
      return {
        image: dataUrl(mimeOf(loaded, source.declaredMime), source.base64, loaded !== undefined),
      };
    // A file (uploaded with the request, or earlier through the upload protocol) lives with us,
    // which the upstream cannot read: its bytes go along, encoded here.
    if (loaded === undefined)
      throw new Error(`${image.path}: an uploaded file reached a channel without its bytes`);
    return { image: dataUrl(`image/${loaded.format}`, loaded.bytes().toString('base64'), true) };
  });
  return {
    model: upstreamModel,
    input: { messages: [{ role: 'user', content: [...images, { text: request.prompt.text }] }] },
    parameters: parametersOf(request, job),
  };
}

function mimeOf(loaded: LoadedImage | undefined, declared: string): string {
  return loaded === undefined ? declared : `image/${loaded.format}`;
}

function parametersOf(request: GenerationRequest, job: EngineJob): JsonObject {
  if (request.model === MODEL_A) {
    const parameters = request.parameters;
    const fields: JsonObject = {
      size: sizeText(parameters.size),
      n: parameters.n,
      enable_sequential: parameters.sequential,
    };
    if (request.mode === 'text-to-image') fields.thinking_mode = parameters.thinkingMode;
    if (parameters.colorPalette !== undefined)
      fields.color_palette = parameters.colorPalette.map(paletteEntry);
    if (parameters.bboxList !== undefined)
      fields.bbox_list = parameters.bboxList.map((boxes) => boxes.map((box) => [...box]));
    fields.watermark = parameters.watermark;
    fields.seed = job.seed;
    return fields;
  }
  const parameters = request.parameters;
  const fields: JsonObject = { n: parameters.n };
  if (parameters.negativePrompt !== undefined) fields.negative_prompt = parameters.negativePrompt;
  fields.prompt_extend = parameters.promptExtend;
  fields.watermark = parameters.watermark;
  fields.size = `${job.output.width}*${job.output.height}`;
  fields.seed = job.seed;
  return fields;
}

function sizeText(size: ModelASize): string {
  return size.kind === 'preset' ? size.preset : `${size.width}*${size.height}`;
}

/** 1250 basis points -> `12.50%`. */
export function ratioText(basisPoints: number): string {
  return `${Math.floor(basisPoints / 100)}.${String(basisPoints % 100).padStart(2, '0')}%`;
}

function paletteEntry(color: PaletteColor): { hex: string; ratio: string } {
  return { hex: color.hex, ratio: ratioText(color.basisPoints) };
}

/**
 * Reads a successful answer (a sync response body, or a SUCCEEDED task) into images and counts.
 * Images are read from `output.choices[].message.content[].image` and, for older image tasks,
 * `output.results[].url`. What is billed is `usage.image_count` when the upstream reports it.
 */
export function readDashScopeOutput(
  body: unknown,
  job: EngineJob,
): { ok: true; output: UpstreamOutput } | { ok: false; problem: string } {
  const output = objectAt(body, 'output');
  if (output === undefined) return { ok: false, problem: 'answer has no output' };
  const urls: string[] = [];
  for (const choice of arrayAt(output, 'choices') ?? []) {
    for (const item of arrayAt(objectAt(choice, 'message'), 'content') ?? []) {
      const image = stringAt(item, 'image');
      if (image !== undefined) urls.push(image);
    }
  }
  for (const result of arrayAt(output, 'results') ?? []) {
    const url = stringAt(result, 'url');
    if (url !== undefined) urls.push(url);
  }
  if (urls.length === 0) return { ok: false, problem: 'answer holds no images' };
  const usage = objectAt(body, 'usage');
  const size = outputSizeOf(usage) ?? job.output;
  const images: ProducedImage[] = urls.map((url) => ({ kind: 'upstream', url }));
  const imagesReported = countAt(usage, 'image_count');
  return {
    ok: true,
    output: {
      images,
      width: size.width,
      height: size.height,
      ...(imagesReported === undefined ? {} : { imagesReported }),
      ...tokensAt(usage),
    },
  };
}

function outputSizeOf(
  usage: JsonObject | undefined,
): { width: number; height: number } | undefined {
  const text = stringAt(usage, 'size');
  const match = text === undefined ? null : /^(\d+)\*(\d+)$/.exec(text);
  if (match !== null) return { width: Number(match[1]), height: Number(match[2]) };
  const width = countAt(usage, 'width');
  const height = countAt(usage, 'height');
  return width !== undefined && height !== undefined && width > 0 && height > 0
    ? { width, height }
    : undefined;
}

/** The error fields of an answer: top-level `code`/`message`, or a task's `output.code`. */
export function errorOf(body: unknown): { code: string; message: string } | undefined {
  const holder = isObject(body) && typeof body.code === 'string' ? body : objectAt(body, 'output');
  const code = stringAt(holder, 'code');
  if (code === undefined || code === '') return undefined;
  return { code, message: stringAt(holder, 'message') ?? '' };
}

/**
 * What an error answer means for routing. `status` is the HTTP status (200 for an error body
 * or a failed task); `retryAfterMs` is the upstream's hint.
 */
export function classifyDashScopeError(
  status: number,
  error: { code: string; message: string } | undefined,
  key: ApiKey,
  retryAfterMs?: number,
): AttemptResult {
  const code = error?.code ?? '';
  const message = redactKeys(excerpt(error?.message ?? '', 500), key);
  const label = `HTTP ${status}${code === '' ? '' : ` ${code}`}${message === '' ? '' : `: ${message}`}`;

  if (
    status === 401 ||
    status === 403 ||
    /^(InvalidApiKey|AccessDenied|Arrearage)/.test(code) ||
    /\.AccessDenied/.test(code)
  )
    return failure('key-rejected', `key rejected (${label})`);
  if (status === 429 || code.startsWith('Throttling'))
    return failure('throttled', `throttled (${label})`, optional({ retryAfterMs }));
  if (status >= 500)
    return failure('server-error', label, {
      category: status === 503 || status === 504 ? 'unavailable' : 'upstream-error',
      ...optional({ retryAfterMs }),
    });
  if (/model.{0,20}not (exist|found)/i.test(message) || code === 'ModelNotFound')
    // The channel's `models` map names a model this upstream lacks: our configuration, not the caller's request.
    return failure('error-body', `upstream does not know the model (${label})`);
  const callerError = callerErrorOf(status, code, message);
  if (callerError !== undefined)
    return failure('rejected', `request refused (${label})`, { callerError });
  return failure('error-body', label);
}

/** Upstream refusals that are about the request: passed to the caller as a 400. */
function callerErrorOf(status: number, code: string, message: string): GatewayError | undefined {
  const text = message === '' ? code : message;
  if (/^data_?inspection/i.test(code) || code === 'IPInfringementSuspect')
    return new GatewayError('DataInspectionFailed', text);
  if (code === 'InvalidURL' || code === 'InvalidImage') return new GatewayError(code, text);
  if (code.startsWith('InvalidParameter')) return new GatewayError('InvalidParameter', text);
  if (status === 400 && code !== '')
    return new GatewayError('InvalidParameter', `${code}: ${text}`);
  return undefined;
}

function optional(fields: { retryAfterMs: number | undefined }): { retryAfterMs?: number } {
  return fields.retryAfterMs === undefined ? {} : { retryAfterMs: fields.retryAfterMs };
}

export type TaskState =
  | { state: 'running' }
  | { state: 'succeeded'; body: unknown }
  | {
      state: 'failed' | 'canceled' | 'unknown';
      error: { code: string; message: string } | undefined;
    };

/** `output.task_status` of a task answer; undefined when the answer is not a task. */
export function readTaskState(body: unknown): TaskState | undefined {
  const status = stringAt(objectAt(body, 'output'), 'task_status');
  switch (status) {
    case 'PENDING':
    case 'RUNNING':
    case 'SUSPENDED':
      return { state: 'running' };
    case 'SUCCEEDED':
      return { state: 'succeeded', body };
    case 'FAILED':
      return { state: 'failed', error: errorOf(body) };
    case 'CANCELED':
      return { state: 'canceled', error: errorOf(body) };
    case 'UNKNOWN':
      return { state: 'unknown', error: errorOf(body) };
    default:
      return undefined;
  }
}

export function readTaskId(body: unknown): string | undefined {
  const id = stringAt(objectAt(body, 'output'), 'task_id');
  return id === undefined || id === '' ? undefined : id;
}
