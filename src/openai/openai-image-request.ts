import type { GenerationRequest, InputImage } from '../domain/generation-request.js';
import type { ModelAliases } from '../domain/model-aliases.js';
import { validateRequest } from '../validate/validate-request.js';
import { COMMON_FIELDS, EXTRA_FIELDS, MASK_REFUSAL, OPTION_RULES } from './openai-fields.js';
import { fieldError, inOpenAiTerms } from './openai-terms.js';
import { echo, echoQuoted } from '../errors/echo.js';

export type ResponseFormat = 'url' | 'b64_json';

/** An OpenAI images request, validated: the shared GenerationRequest and how to answer it. */
export interface OpenAiImageRequest {
  request: GenerationRequest;
  responseFormat: ResponseFormat;
}

/** An uploaded input image: its name in messages (`image`, `image[1]`) and its bytes. */
export interface UploadedImage {
  name: string;
  bytes: Buffer;
}

/** Stands in for an upload while the shared validator counts and places the images. */
const UPLOAD_PLACEHOLDER = 'data:image/png;base64,AAAA';
const WIDTH_X_HEIGHT = /^([1-9][0-9]{0,8})x([1-9][0-9]{0,8})$/;
const PRESETS: ReadonlySet<string> = new Set(['1K', '2K', '4K']);

export type ImageRoute = 'generations' | 'edits';

/**
 * How each route answers when `response_format` is absent. Generations: URLs, DALL-E's default.
 * Edits: base64, the only answer of OpenAI's current image models (the GPT image models, which
 * do not take `response_format`), so clients written for them, such as the AI SDK's
 * `@ai-sdk/openai`, never ask for it and read only `b64_json`.
 */
export const DEFAULT_RESPONSE_FORMAT: Readonly<Record<ImageRoute, ResponseFormat>> = {
  generations: 'url',
  edits: 'b64_json',
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** OpenAI's `size` as our `size` parameter: undefined for `auto`, `W*H` for `WxH`, presets as they are. */
function sizeParameter(size: unknown): unknown {
  if (size === undefined || size === 'auto') return undefined;
  if (typeof size !== 'string') return size;
  const match = WIDTH_X_HEIGHT.exec(size);
  if (match !== null) return `${match[1]}*${match[2]}`;
  if (PRESETS.has(size)) return size;
  throw fieldError(
    'size',
    `must be auto, WIDTHxHEIGHT such as 1024x1024, or (gen-2.7-image-pro) 1K, 2K or 4K; got ${echoQuoted(size)}`,
  );
}

function checkFieldNames(body: Record<string, unknown>, route: ImageRoute): void {
  for (const name of Object.keys(body)) {
    if (COMMON_FIELDS.has(name)) continue;
    if (name === 'mask' && route === 'edits') throw fieldError('mask', MASK_REFUSAL);
    if (name === 'image' || name === 'image[]' || name === 'mask')
      throw fieldError(
        name,
        route === 'edits'
          ? 'must be a file part of the multipart body'
          : 'input images go to /v1/images/edits',
      );
    const base = /^([a-z_]+)\[/.exec(name)?.[1];
    if (base !== undefined && (EXTRA_FIELDS as readonly string[]).includes(base))
      throw fieldError(name, `send ${echo(base)} as JSON text in one form field`);
    throw fieldError(name, `is not a field of /v1/images/${route}`);
  }
}

function checkOptions(body: Record<string, unknown>): void {
  for (const [name, rule] of Object.entries(OPTION_RULES)) {
    const value = body[name];
    if (value === undefined || rule.accepted.includes(value)) continue;
    const allowed =
      rule.accepted.length === 0
        ? 'is not supported'
        : `must be ${rule.accepted.map((v) => JSON.stringify(v)).join(' or ')}`;
    throw fieldError(name, `${allowed}: ${rule.why}`);
  }
}

function readResponseFormat(value: unknown, route: ImageRoute): ResponseFormat {
  if (value === undefined) return DEFAULT_RESPONSE_FORMAT[route];
  if (value === 'url' || value === 'b64_json') return value;
  throw fieldError('response_format', 'must be "url" or "b64_json"');
}

/**
 * Translates an OpenAI images request into the DashScope-shaped body the shared validator takes,
 * validates it there (every rule of docs/api.md §2-§4 applies unchanged), and restates any
 * refusal in the OpenAI request's terms. Uploads take the places of the validator's images.
 */
export function readOpenAiImageRequest(
  body: unknown,
  route: ImageRoute,
  aliases: ModelAliases,
  uploads: readonly UploadedImage[] = [],
): OpenAiImageRequest {
  if (!isPlainObject(body)) throw fieldError('body', 'must be a JSON object');
  for (const key of Object.keys(body)) if (body[key] === null) delete body[key];
  checkFieldNames(body, route);
  if (route === 'edits' && uploads.length === 0)
    throw fieldError('image', 'is required: one or more image files');
  if (body.prompt === undefined) throw fieldError('prompt', 'is required');
  if (body.user !== undefined && typeof body.user !== 'string')
    throw fieldError('user', 'must be a string');
  checkOptions(body);
  const responseFormat = readResponseFormat(body.response_format, route);
  const parameters: Record<string, unknown> = { n: body.n, size: sizeParameter(body.size) };
  for (const name of EXTRA_FIELDS) parameters[name] = body[name];
  for (const name of Object.keys(parameters))
    if (parameters[name] === undefined) delete parameters[name];
  const names = uploads.map((upload) => upload.name);
  let request: GenerationRequest;
  try {
    request = validateRequest(
      {
        model: body.model,
        input: {
          messages: [
            {
              role: 'user',
              content: [
                { text: body.prompt },
                ...uploads.map(() => ({ image: UPLOAD_PLACEHOLDER })),
              ],
            },
          ],
        },
        parameters,
      },
      aliases,
    );
  } catch (error) {
    throw inOpenAiTerms(error, names);
  }
  const images: InputImage[] = uploads.map((upload) => ({
    path: upload.name,
    source: { kind: 'upload', bytes: upload.bytes },
  }));
  return { request: Object.assign({}, request, { images }), responseFormat };
}
