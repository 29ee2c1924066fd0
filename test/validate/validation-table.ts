import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ModelARequest, ModelBRequest } from '../../src/domain/generation-request.js';
import { MODEL_A, MODEL_B, type ModelId } from '../../src/domain/models.js';
import type { ErrorCode } from '../../src/errors/error-table.js';
import { validateRequest } from '../../src/validate/validate-request.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * The two kinds of table row of the validation suite. Rejected rows go over HTTP, through auth and
 * the error reply, so the status, `code` and `message` the caller sees are what is asserted.
 * Accepted rows call the validator directly and compare the normalized request.
 */

export const MODELS = [MODEL_A, MODEL_B] as const;

export interface RejectedCase {
  /** What is wrong with the body, in words; it becomes the test name. */
  name: string;
  /** The request body: sent as JSON, or as is when it is a string. */
  body: unknown;
  /** The JSON path that the message must start with, followed by `: `. */
  path: string;
  /** Default `InvalidParameter`. */
  code?: ErrorCode;
  /** What the message must say after the path, where several rules share one path. */
  problem?: RegExp;
}

type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** The members of the normalized request a row cares about; members not named are not compared. */
export type ExpectedRequest = DeepPartial<ModelARequest> | DeepPartial<ModelBRequest>;

export interface AcceptedCase {
  name: string;
  /** The request body, or its JSON text when it is a string. */
  body: unknown;
  expect: ExpectedRequest;
}

/** One `it` per row: POST the body with a real token, expect 400, the code and the path. */
export function rejectedOverHttp(title: string, cases: readonly RejectedCase[]): void {
  describe(title, () => {
    let gateway: TestGateway;
    let authorization: string;
    before(async () => {
      gateway = await startTestGateway();
      authorization = await gateway.bearer();
    });
    after(() => gateway.close());

    for (const row of cases) {
      const code = row.code ?? 'InvalidParameter';
      it(`rejects ${row.name}: 400 ${code} at ${row.path}`, async () => {
        const response = await gateway.app.inject({
          method: 'POST',
          url: GENERATION_URL,
          headers: { authorization, 'content-type': 'application/json' },
          payload: typeof row.body === 'string' ? row.body : JSON.stringify(row.body),
        });
        assert.equal(response.statusCode, 400, response.body.slice(0, 500));
        const body = response.json() as { code: string; message: string; request_id: string };
        assert.equal(body.code, code, body.message);
        const prefix = `${row.path}: `;
        assert.ok(
          body.message.startsWith(prefix),
          `message ${JSON.stringify(body.message)} should start with ${JSON.stringify(prefix)}`,
        );
        if (row.problem !== undefined) assert.match(body.message.slice(prefix.length), row.problem);
        assert.equal(body.request_id, response.headers['x-request-id']);
      });
    }
  });
}

/** One `it` per row: the validator accepts the body and normalizes it as expected. */
export function acceptedByValidator(title: string, cases: readonly AcceptedCase[]): void {
  describe(title, () => {
    for (const row of cases) {
      it(`accepts ${row.name}`, () => {
        // The validator drops null members in place; each row gets its own copy. A string body is
        // raw JSON, for what only JSON text can say (`2.0`).
        const body: unknown =
          typeof row.body === 'string' ? JSON.parse(row.body) : structuredClone(row.body);
        const request = validateRequest(body);
        assertSubset(request, row.expect, 'request');
      });
    }
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every member named in `expected` equals the one in `actual`; arrays and leaves compare whole. */
export function assertSubset(actual: unknown, expected: unknown, where: string): void {
  if (isPlainObject(expected)) {
    assert.ok(isPlainObject(actual), `${where}: expected an object, got ${String(actual)}`);
    for (const [key, value] of Object.entries(expected)) {
      assertSubset(actual[key], value, `${where}.${key}`);
    }
    return;
  }
  assert.deepEqual(actual, expected, where);
}

/** Model A's parameters when none is given, for a text-to-image request. */
export const MODEL_A_DEFAULTS = {
  sequential: false,
  size: { kind: 'preset', preset: '2K' },
  n: 1,
  thinkingMode: true,
  colorPalette: undefined,
  watermark: false,
  seed: undefined,
  bboxList: undefined,
} as const;

/** Model B's parameters when none is given. */
export const MODEL_B_DEFAULTS = {
  n: 1,
  negativePrompt: undefined,
  promptExtend: true,
  watermark: false,
  size: undefined,
  seed: undefined,
} as const;

// Bodies.

export function imageUrl(index: number): string {
  return `https://images.example.com/input-${index}.png`;
}

/** `count` http(s) image items; validation never fetches them. */
export function imageItems(count: number): { image: string }[] {
  return Array.from({ length: count }, (_, index) => ({ image: imageUrl(index) }));
}

/** A body whose one message has exactly these content items, which may be malformed. */
export function bodyWithItems(
  model: ModelId,
  items: unknown[],
  parameters?: Record<string, unknown> | null,
): Record<string, unknown> {
  return bodyWithInput(model, { messages: [{ role: 'user', content: items }] }, parameters);
}

/** A body with this `input`, which may be malformed. */
export function bodyWithInput(
  model: ModelId,
  input: unknown,
  parameters?: Record<string, unknown> | null,
): Record<string, unknown> {
  return { model, input, ...(parameters === undefined ? {} : { parameters }) };
}

/** A prompt with `count` images after it, and these parameters. */
export function withImages(
  model: ModelId,
  count: number,
  parameters?: Record<string, unknown>,
): Record<string, unknown> {
  return bodyWithItems(model, [{ text: 'edit these' }, ...imageItems(count)], parameters);
}

export function modelName(model: ModelId): string {
  return model === MODEL_A ? 'model A' : 'model B';
}
