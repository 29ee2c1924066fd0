import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import OpenAI from 'openai';
import { MODEL_A } from '../../src/domain/models.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import {
  type BillingGateway,
  eventually,
  startBillingGateway,
} from '../helpers/billing-gateway.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { testImage } from './e2e-helpers.js';

async function open(t: TestContext, now?: () => number) {
  const gateway = await startBillingGateway({
    env: { IMAGEGATE_LEDGER_FLUSH_MS: '10' },
    ...(now === undefined ? {} : { now }),
  });
  t.after(() => gateway.close());
  const address = await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  return { gateway, base: `${address}/v1` };
}

function sdk(base: string, authorization: string): OpenAI {
  return new OpenAI({
    apiKey: authorization.slice('Bearer '.length),
    baseURL: base,
    maxRetries: 0,
  });
}

async function rowsOf(gateway: BillingGateway, tokenId: string, count: number) {
  await eventually(
    async () => (await gateway.admission.usage.list({ tokenId }, 10)).length >= count,
  );
  return gateway.admission.usage.list({ tokenId }, 10);
}

const BOUNDARY = 'openai-h6test';

/** A multipart body byte for byte as the Node SDK's streaming encoder writes it. */
function sdkMultipart(
  parts: { name: string; value: string | Buffer; filename?: string }[],
): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(Buffer.from(`--${BOUNDARY}\r\n`));
    if (part.filename !== undefined) {
      chunks.push(
        Buffer.from(
          `Content-Disposition: form-data; name="${part.name}"; filename="${part.filename}"\r\nContent-Type: image/png\r\n\r\n`,
        ),
      );
      chunks.push(Buffer.from(part.value));
    } else {
      chunks.push(
        Buffer.from(
          `Content-Disposition: form-data; name="${part.name}"\r\n\r\n${String(part.value)}`,
        ),
      );
    }
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

describe('the OpenAI routes share admission, idempotency and the ledger', () => {
  it('a quota 429 is RateLimitError, not retried; the rate limit 429 carries Retry-After', async (t) => {
    const { gateway, base } = await open(t);
    const quota = await gateway.token({ limits: { imageQuota: 1 } });
    await assert.rejects(
      sdk(base, quota.authorization).images.generate({ model: MODEL_A, prompt: 'x', n: 2 }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.RateLimitError);
        assert.equal(error.code, 'Throttling.AllocationQuota');
        assert.equal(error.type, 'insufficient_quota');
        assert.equal(error.headers?.get('x-should-retry'), 'false');
        return true;
      },
    );
    const rate = await gateway.token({ limits: { requestsPerMinute: 1 } });
    const client = sdk(base, rate.authorization);
    await client.images.generate({ model: MODEL_A, prompt: 'x' });
    await assert.rejects(
      client.images.generate({ model: MODEL_A, prompt: 'x' }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.RateLimitError);
        assert.equal(error.code, 'Throttling.RateQuota');
        assert.ok(Number(error.headers?.get('retry-after')) > 0);
        return true;
      },
    );
  });

  it('an engine that is down is InternalServerError 503 with Retry-After', async (t) => {
    const { gateway, base } = await open(t);
    const { authorization } = await gateway.token();
    gateway.engine.failure = new GatewayError('ModelUnavailable', 'every channel is down', {
      'Retry-After': '5',
    });
    await assert.rejects(
      sdk(base, authorization).images.generate({ model: MODEL_A, prompt: 'x' }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.InternalServerError);
        assert.equal(error.status, 503);
        assert.equal(error.code, 'ModelUnavailable');
        assert.equal(error.headers?.get('retry-after'), '5');
        return true;
      },
    );
  });

  it('a repeat with the same Idempotency-Key gets the first images without generating again', async (t) => {
    const { gateway, base } = await open(t);
    const { authorization } = await gateway.token();
    const client = sdk(base, authorization);
    const body = { model: MODEL_A, prompt: 'a fox', n: 2 };
    const options = { headers: { 'Idempotency-Key': 'openai-key-1' } };
    const first = await client.images.generate(body, options).withResponse();
    const again = await client.images.generate(body, options).withResponse();
    assert.equal(gateway.engine.calls, 1);
    assert.deepEqual(again.data.data, first.data.data);
    assert.equal(again.response.headers.get('idempotent-replayed'), 'true');
  });

  it("a replay answers the first answer's created time, however much later it comes", async (t) => {
    let clock = Date.now();
    const { gateway, base } = await open(t, () => clock);
    const { authorization } = await gateway.token();
    const generate = () =>
      fetch(`${base}/images/generations`, {
        method: 'POST',
        headers: { authorization, 'idempotency-key': 'later', 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL_A, prompt: 'a harbour', n: 1 }),
      });
    const first = (await (await generate()).json()) as { created: number };
    assert.equal(first.created, Math.floor(clock / 1000));
    clock += 90_000;
    const again = await generate();
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await again.json(), first);
  });

  it('an edit repeated byte for byte is a replay; the same key with another file is refused', async (t) => {
    const { gateway, base } = await open(t);
    const { authorization } = await gateway.token();
    const png = await testImage(320, 320, 0, 'png');
    const post = (image: Buffer) =>
      fetch(`${base}/images/edits`, {
        method: 'POST',
        headers: {
          authorization,
          'idempotency-key': 'edit-key',
          'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        },
        body: sdkMultipart([
          { name: 'image[]', value: image, filename: 'a.png' },
          { name: 'image[]', value: image, filename: 'b.png' },
          { name: 'model', value: MODEL_A },
          { name: 'prompt', value: 'autumn' },
          { name: 'n', value: '2' },
          { name: 'watermark', value: 'true' },
          // URLs: this gateway's fake engine stores no image to answer as base64.
          { name: 'response_format', value: 'url' },
        ]),
      });
    const first = await post(png);
    assert.equal(first.status, 200, await first.clone().text());
    const again = await post(png);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await again.json(), await first.json());
    const other = await post(await testImage(320, 320, 50, 'png'));
    assert.equal(other.status, 400);
    const refusal = (await other.json()) as { error: { code: string; message: string } };
    assert.equal(refusal.error.code, 'InvalidParameter');
    assert.match(refusal.error.message, /Idempotency-Key/);
    assert.equal(gateway.engine.calls, 1);
  });

  it('a validation refusal costs nothing and writes the same ledger row as on the DashScope route', async (t) => {
    const { gateway, base } = await open(t);
    const openAi = await gateway.token();
    const dashScope = await gateway.token();
    await assert.rejects(
      sdk(base, openAi.authorization).images.generate({ model: MODEL_A, prompt: 'x', n: 9 }),
      OpenAI.BadRequestError,
    );
    const refused = await gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: { authorization: dashScope.authorization, 'content-type': 'application/json' },
      payload: modelABody({ n: 9 }),
    });
    assert.equal(refused.statusCode, 400);
    // The DashScope route keeps its own error shape.
    assert.deepEqual(Object.keys(refused.json() as object).sort(), [
      'code',
      'message',
      'request_id',
    ]);
    assert.equal(gateway.engine.calls, 0);
    const [openAiRow] = await rowsOf(gateway, openAi.id, 1);
    const [dashScopeRow] = await rowsOf(gateway, dashScope.id, 1);
    assert.ok(openAiRow !== undefined && dashScopeRow !== undefined);
    const varying = new Set(['id', 'requestId', 'tokenId', 'gatewayMs', 'createdAt', 'frontDoor']);
    const shape = (row: typeof openAiRow) =>
      Object.fromEntries(Object.entries(row).filter(([key]) => !varying.has(key)));
    assert.deepEqual(shape(openAiRow), shape(dashScopeRow));
    assert.equal(openAiRow.status, 400);
    assert.equal(openAiRow.errorCode, 'InvalidParameter');
    assert.equal(openAiRow.costMicros, 0);
    assert.equal(openAiRow.imagesBilled, 0);
    assert.equal(openAiRow.model, MODEL_A);
    assert.deepEqual([openAiRow.frontDoor, dashScopeRow.frontDoor], ['openai', 'dashscope']);
  });

  it('refuses JSON on the edits route and multipart on the generations route, in OpenAI shape', async (t) => {
    const { gateway, base } = await open(t);
    const { authorization } = await gateway.token();
    const edits = await fetch(`${base}/images/edits`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL_A, prompt: 'x' }),
    });
    assert.equal(edits.status, 400);
    const body = (await edits.json()) as { error: { message: string; code: string } };
    assert.match(body.error.message, /multipart\/form-data/);
    assert.equal(edits.headers.get('x-request-id') !== null, true);
    const generations = await fetch(`${base}/images/generations`, {
      method: 'POST',
      headers: { authorization, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      body: sdkMultipart([{ name: 'prompt', value: 'x' }]),
    });
    assert.equal(generations.status, 400);
    assert.equal(
      ((await generations.json()) as { error: { code: string } }).error.code,
      'InvalidParameter',
    );
  });

  it('refuses a multipart part without a name, saying so rather than naming "undefined"', async (t) => {
    const { gateway, base } = await open(t);
    const { authorization } = await gateway.token();
    for (const nameless of [
      'Content-Disposition: form-data\r\n\r\nx',
      'Content-Disposition: form-data; filename="a.png"\r\nContent-Type: image/png\r\n\r\nx',
    ]) {
      const body = Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${MODEL_A}\r\n` +
          `--${BOUNDARY}\r\n${nameless}\r\n--${BOUNDARY}--\r\n`,
      );
      const answer = await fetch(`${base}/images/edits`, {
        method: 'POST',
        headers: { authorization, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
        body,
      });
      assert.equal(answer.status, 400);
      const error = ((await answer.json()) as { error: { message: string; code: string } }).error;
      assert.equal(error.code, 'InvalidParameter');
      assert.match(error.message, /^body: a part of the multipart body has no name/);
    }
  });
});
