import { GatewayError } from '../errors/gateway-error.js';
import { OpenAiFieldError } from './openai-error.js';
import { echo } from '../errors/echo.js';

/** Where the translation puts the prompt and the images in the DashScope-shaped body. */
export const PROMPT_PATH = 'input.messages[0].content[0].text';
const CONTENT = 'input.messages[0].content';
const CONTENT_ITEM = /input\.messages\[0\]\.content\[(\d+)\](?:\.(?:text|image))?/g;
const PARAMETER = /\bparameters\.(?=[a-z_])/g;
const STAR_SIZE = /\b(\d+)\*(\d+)\b/g;
const LEADING_PATH = /^([A-Za-z_][A-Za-z0-9_]*(?:\[\d*\])*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*): /;

/** Error codes whose message names a request field. */
const FIELD_CODES = new Set(['InvalidParameter', 'InvalidImage', 'InvalidURL']);

/**
 * Restates an error of the shared validator or pipeline, which names DashScope JSON paths, in
 * the OpenAI request's own terms: `parameters.seed` is `seed`, the text item is `prompt`, the
 * n-th image item is that upload's name (`image`, `image[1]`), and sizes read `WIDTHxHEIGHT`.
 * The field the message starts with becomes the error's `param`.
 */
export function inOpenAiTerms(error: unknown, imageNames: readonly string[]): unknown {
  if (!(error instanceof GatewayError) || !FIELD_CODES.has(error.code)) return error;
  if (error instanceof OpenAiFieldError) return error;
  const message = error.message
    .replace(CONTENT_ITEM, (_match, index: string) =>
      index === '0' ? 'prompt' : (imageNames[Number(index) - 1] ?? 'image'),
    )
    .replaceAll(CONTENT, 'image')
    .replace(PARAMETER, '');
  const param = LEADING_PATH.exec(message)?.[1];
  if (param === undefined || param === 'body')
    return new GatewayError(error.code, message, error.headers);
  const worded =
    param === 'size'
      ? message.replace(STAR_SIZE, '$1x$2').replaceAll('<width>*<height>', 'WIDTHxHEIGHT')
      : message;
  return new OpenAiFieldError(error.code, worded, param, { ...error.headers });
}

/** A refusal of an OpenAI request field, made by the translation itself. */
export function fieldError(param: string, problem: string): OpenAiFieldError {
  const named = echo(param);
  return new OpenAiFieldError('InvalidParameter', `${named}: ${problem}`, named);
}
