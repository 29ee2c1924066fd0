import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { GatewayError } from '../errors/gateway-error.js';
import { childPath, jsonPointerToPath } from './json-path.js';

/** A compiled schema check: returns the first problem as an InvalidParameter naming its path. */
export type SchemaCheck = (value: unknown) => GatewayError | undefined;

const ajv = new Ajv({ allErrors: false, strict: true, verbose: true });
ajv.addKeyword({ keyword: 'x-error', schemaType: 'string' });

export function compileSchemaCheck(schema: TSchema, describeUnknownField: string): SchemaCheck {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value) => {
    if (validate(value)) return undefined;
    const [first] = validate.errors ?? [];
    const problem =
      first === undefined
        ? { path: '', text: 'is invalid' }
        : describe(first, describeUnknownField);
    return new GatewayError(
      'InvalidParameter',
      problem.path === '' ? problem.text : `${problem.path}: ${problem.text}`,
    );
  };
}

function describe(error: ErrorObject, unknownField: string): { path: string; text: string } {
  const path = jsonPointerToPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { path: childPath(path, String(params.missingProperty)), text: 'is required' };
    case 'additionalProperties':
      return { path: childPath(path, String(params.additionalProperty)), text: unknownField };
    case 'type':
      return { path, text: `must be ${article(String(params.type))}` };
    case 'const':
      return { path, text: `must be ${JSON.stringify(params.allowedValue)}` };
    case 'enum':
      return {
        path,
        text: `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      };
    case 'minimum':
    case 'maximum':
      return {
        path,
        text: `must be ${error.keyword === 'minimum' ? 'at least' : 'at most'} ${String(params.limit)}`,
      };
    case 'minItems':
      return {
        path,
        text:
          customMessage(error) ??
          `must have at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`,
      };
    case 'maxItems':
      return {
        path,
        text:
          customMessage(error) ??
          `must have at most ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`,
      };
    case 'pattern':
      return { path, text: customMessage(error) ?? `must match ${String(params.pattern)}` };
    default:
      return { path, text: error.message ?? 'is invalid' };
  }
}

/** A schema's `x-error` says in words what a pattern or an item count means there. */
function customMessage(error: ErrorObject): string | undefined {
  const custom = (error.parentSchema as Record<string, unknown> | undefined)?.['x-error'];
  return typeof custom === 'string' ? custom : undefined;
}

function article(type: string): string {
  switch (type) {
    case 'object':
      return 'an object';
    case 'array':
      return 'an array';
    case 'integer':
      return 'an integer';
    default:
      return `a ${type}`;
  }
}
