import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fingerprintOf } from '../../src/idempotency/fingerprint.js';
import { MODEL_A } from '../../src/domain/models.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway } from '../helpers/test-gateway.js';

const DEPTH = 100_000;

/** A model A body with a 100000-deep nested array in an unknown field: small, but very deep. */
function deepBody(): string {
  return `{"model":"${MODEL_A}","input":{"messages":[{"role":"user","content":[{"text":"x"}]}]},"deep":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}`;
}

describe('Idempotency-Key on a deeply nested body', () => {
  it('answers 400 InvalidParameter, never 5xx, when the body is 100000 levels deep', async (t) => {
    const gateway = await startTestGateway();
    t.after(() => gateway.close());
    const response = await gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: {
        authorization: await gateway.bearer(),
        'content-type': 'application/json',
        'idempotency-key': 'deep-body-1',
      },
      payload: deepBody(),
    });
    assert.equal(response.statusCode, 400, response.body.slice(0, 500));
    const body = response.json() as { code: string; message: string };
    assert.equal(body.code, 'InvalidParameter');
    assert.match(body.message, /^deep: /);
  });

  it('fingerprints a deep body without overflowing the stack', () => {
    const deep = JSON.parse(deepBody()) as unknown;
    assert.match(fingerprintOf(deep), /^[0-9a-f]{64}$/);
    assert.equal(fingerprintOf(deep), fingerprintOf(JSON.parse(deepBody())));
  });

  it('keeps the canonical form: key order and whitespace do not change the fingerprint', () => {
    const first = JSON.parse('{"b":[1,{"y":null,"x":"s"}],"a":{"d":true,"c":2.5}}') as unknown;
    const second = JSON.parse(
      '{ "a": {"c": 2.5, "d": true}, "b": [1, {"x": "s", "y": null}] }',
    ) as unknown;
    assert.equal(fingerprintOf(first), fingerprintOf(second));
    assert.notEqual(fingerprintOf([1, 2]), fingerprintOf([2, 1]));
    assert.notEqual(fingerprintOf({ a: [1] }), fingerprintOf({ a: [[1]] }));
  });

  it('gives the fingerprint keys stored by earlier versions were made with', () => {
    const body = JSON.parse(
      '{"b":[1,{"y":null,"x":"s\\u00e9\\n"}],"a":{"d":true,"c":2.5,"e":[],"f":{}},"g":-0.0}',
    ) as unknown;
    assert.equal(
      fingerprintOf(body),
      '1fa558a1a2bbcd437899aaa3067c0330ec6c4ab45bca2622b3df183882d1a6c5',
    );
  });
});
