import type { GenerationRequest } from '../domain/generation-request.js';
import { DEFAULT_MODEL_ALIASES, type ModelAliases, resolveModel } from '../domain/model-aliases.js';
import { MODEL_A, MODEL_B, MODEL_IDS } from '../domain/models.js';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import { type AnswerFieldsInput, readAnswerOptions } from './answer-options.js';
import { type ContentItem, readContent } from './content.js';
import {
  MODEL_A_MAX_IMAGES,
  type ModelAParametersInput,
  readModelAParameters,
} from './model-a-rules.js';
import {
  MODEL_B_MAX_IMAGES,
  type ModelBParametersInput,
  readModelBParameters,
} from './model-b-rules.js';
import { ModelARequestSchema, ModelBRequestSchema } from './request-schemas.js';
import { compileSchemaCheck } from './schema-check.js';
import { echoQuoted } from '../errors/echo.js';

const checkModelA = compileSchemaCheck(ModelARequestSchema, `is not a field of model ${MODEL_A}`);
const checkModelB = compileSchemaCheck(ModelBRequestSchema, `is not a field of model ${MODEL_B}`);

interface CheckedBody<P> {
  model: string;
  input: { messages: [{ role: 'user'; content: ContentItem[] }] };
  parameters?: P & AnswerFieldsInput;
}

/**
 * The whole of request validation that needs no image bytes: raw parsed JSON in, a typed
 * GenerationRequest out, or a GatewayError naming the JSON path of the first problem.
 * Pure apart from two edits of `body`: `null` members are removed, as they count as absent, and
 * a model alias is replaced by its model id, so that everything after this (the ledger included)
 * sees only model ids. A route passes the configured `aliases`.
 */
export function validateRequest(
  body: unknown,
  aliases: ModelAliases = DEFAULT_MODEL_ALIASES,
): GenerationRequest {
  if (!isPlainObject(body)) {
    throw new GatewayError('InvalidParameter', 'body: must be a JSON object');
  }
  dropNullMembers(body);
  if (body.model === undefined) throw invalidParameter('model', 'is required');
  if (body.input === undefined) throw invalidParameter('input', 'is required');
  const model = resolveModel(body.model, aliases) ?? body.model;
  body.model = model;
  if (model === MODEL_A) {
    const problem = checkModelA(body);
    if (problem !== undefined) throw problem;
    const checked = body as unknown as CheckedBody<ModelAParametersInput>;
    const { prompt, images } = readContent(
      checked.input.messages[0].content,
      MODEL_A_MAX_IMAGES,
      MODEL_A,
    );
    const raw = checked.parameters ?? {};
    const { parameters, mode } = readModelAParameters(raw, images);
    return { model: MODEL_A, prompt, images, mode, parameters, answer: readAnswerOptions(raw) };
  }
  if (model === MODEL_B) {
    const problem = checkModelB(body);
    if (problem !== undefined) throw problem;
    const checked = body as unknown as CheckedBody<ModelBParametersInput>;
    const { prompt, images } = readContent(
      checked.input.messages[0].content,
      MODEL_B_MAX_IMAGES,
      MODEL_B,
    );
    const raw = checked.parameters ?? {};
    const { parameters, mode } = readModelBParameters(raw, images);
    return { model: MODEL_B, prompt, images, mode, parameters, answer: readAnswerOptions(raw) };
  }
  if (typeof model !== 'string') throw invalidParameter('model', 'must be a string');
  const aliasList =
    aliases.size === 0 ? '' : ` or an alias of one (${[...aliases.keys()].join(', ')})`;
  throw invalidParameter(
    'model',
    `must be one of ${MODEL_IDS.join(', ')}${aliasList}, got ${echoQuoted(model)}`,
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Deletes object members whose value is null, at every depth; strings are never walked. Iterative,
 * so a deeply nested body is a 400 from the schema check rather than a stack overflow here.
 */
function dropNullMembers(root: Record<string, unknown>): void {
  const pending: (Record<string, unknown> | unknown[])[] = [root];
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    if (Array.isArray(value)) {
      for (const element of value) {
        if (typeof element === 'object' && element !== null)
          pending.push(element as Record<string, unknown>);
      }
      continue;
    }
    for (const key of Object.keys(value)) {
      const member = value[key];
      if (member === null) delete value[key];
      else if (typeof member === 'object') pending.push(member as Record<string, unknown>);
    }
  }
}
