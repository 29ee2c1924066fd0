import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import { GatewayError } from '../errors/gateway-error.js';
import { childPath, jsonPointerToPath } from './json-path.js';
import { echo } from '../errors/echo.js';

/** One way a value breaks its schema: the JSON path of the offending part, and what is wrong. */
export interface SchemaProblem {
  /** `''` for the value itself; a member the schema does not allow is named by its own path. */
  path: string;
  text: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: SchemaProblem[] };

/** A schema compiled once: the value typed by the schema, or its problems. */
export type SchemaChecker<T extends TSchema> = (value: unknown) => Checked<Static<T>>;

export interface SchemaCheckerOptions {
  /** Every problem (at most one per path, in schema order), or only the first. */
  allProblems: boolean;
  /** What a member the schema does not allow is, e.g. `is not a field of model X`. */
  unknownMember: string;
  /** The string formats the schema's `format` keywords name. */
  formats?: Readonly<Record<string, (value: string) => boolean>>;
}

/**
 * Compiles a TypeBox schema. A schema node's `x-error` says in words what breaking it means
 * there: a string speaks for its `pattern` and item counts; a mapping of keyword to text speaks
 * for exactly the keywords it names (`{ type: ..., minimum: ... }`).
 */
export function compileSchemaChecker<T extends TSchema>(
  schema: T,
  options: SchemaCheckerOptions,
): SchemaChecker<T> {
  const ajv = new Ajv({ allErrors: options.allProblems, strict: true, verbose: true });
  ajv.addKeyword({ keyword: 'x-error', schemaType: ['string', 'object'] });
  for (const [name, validate] of Object.entries(options.formats ?? {}))
    ajv.addFormat(name, { type: 'string', validate });
  const validate = ajv.compile<Static<T>>(schema);
  return (value) => {
    if (validate(value)) return { ok: true, value };
    const problems: SchemaProblem[] = [];
    for (const error of validate.errors ?? []) {
      const problem = describe(error, options.unknownMember);
      if (!problems.some((known) => known.path === problem.path)) problems.push(problem);
    }
    return { ok: false, problems };
  };
}

/** A compiled request check: returns the first problem as an InvalidParameter naming its path. */
export type SchemaCheck = (value: unknown) => GatewayError | undefined;

export function compileSchemaCheck(schema: TSchema, describeUnknownField: string): SchemaCheck {
  const check = compileSchemaChecker(schema, {
    allProblems: false,
    unknownMember: describeUnknownField,
  });
  return (value) => {
    const checked = check(value);
    if (checked.ok) return undefined;
    const [problem = { path: '', text: 'is invalid' }] = checked.problems;
    return new GatewayError(
      'InvalidParameter',
      problem.path === '' ? problem.text : `${echo(problem.path)}: ${problem.text}`,
    );
  };
}

function describe(error: ErrorObject, unknownMember: string): SchemaProblem {
  const path = jsonPointerToPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  const custom = customText(error);
  switch (error.keyword) {
    case 'required':
      return {
        path: childPath(path, String(params.missingProperty)),
        text: custom ?? 'is required',
      };
    case 'additionalProperties':
      return {
        path: childPath(path, String(params.additionalProperty)),
        text: custom ?? unknownMember,
      };
    default:
      return { path, text: custom ?? defaultText(error, params) };
  }
}

function defaultText(error: ErrorObject, params: Record<string, unknown>): string {
  switch (error.keyword) {
    case 'type':
      return `must be ${article(String(params.type))}`;
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'minimum':
      return `must be at least ${String(params.limit)}`;
    case 'maximum':
      return `must be at most ${String(params.limit)}`;
    case 'minItems':
      return `must have at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must have at most ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`;
    case 'pattern':
      return `must match ${String(params.pattern)}`;
    default:
      return error.message ?? 'is invalid';
  }
}

/** The keywords a plain-string `x-error` speaks for. */
const STRING_X_ERROR_KEYWORDS: ReadonlySet<string> = new Set(['pattern', 'minItems', 'maxItems']);

function customText(error: ErrorObject): string | undefined {
  const custom: unknown = (error.parentSchema as Record<string, unknown> | undefined)?.['x-error'];
  if (typeof custom === 'string')
    return STRING_X_ERROR_KEYWORDS.has(error.keyword) ? custom : undefined;
  if (typeof custom !== 'object' || custom === null) return undefined;
  const text: unknown = (custom as Record<string, unknown>)[error.keyword];
  return typeof text === 'string' ? text : undefined;
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
