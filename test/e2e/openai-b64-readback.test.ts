import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import OpenAI from 'openai';
import { MODEL_B } from '../../src/domain/models.js';
import { LEDGER_CODES } from '../../src/errors/error-table.js';

const CALLER_GONE_STATUS = LEDGER_CODES.CallerGone.status;
import { eventually, gate } from '../helpers/billing-gateway.js';
import { connectionsOpen } from '../helpers/server-connections.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

async function openGateway(t: TestContext) {
  const gateway = await startTestGateway();
  t.after(() => gateway.close());
  const baseURL = `${await gateway.listen()}/v1`;
  const { token, record } = await gateway.services.tokenIssuer.issue({
    name: 'b64',
    account: 'acme',
    admin: false,
    expiresInSeconds: undefined,
  });
  // One image in all: a second paid image would be refused.
  await gateway.admission.limits.update(record.id, { imageQuota: 1 });
  const client = new OpenAI({ apiKey: token, baseURL, maxRetries: 0 });
  return { gateway, client, tokenId: record.id, baseURL, token };
}

/** The token's rows once there are `count`: a base64 answer is billed after it is handed over. */
async function rowsOf(gateway: TestGateway, tokenId: string, count = 1) {
  const rows = async () => {
    await gateway.admission.ledger.flush();
    return gateway.admission.usage.list({ tokenId }, 10);
  };
  await eventually(async () => (await rows()).length >= count, 30_000);
  return rows();
}

const B64_REQUEST = {
  model: MODEL_B,
  prompt: 'a lighthouse at dusk',
  n: 1,
  size: '1024x1024',
  response_format: 'b64_json',
} as const;

describe('a b64_json answer whose images cannot be read back', () => {
  it('is a 500 that bills nothing and spends no quota; the next request is served and billed', async (t) => {
    const { gateway, client, tokenId } = await openGateway(t);
    const blobs = gateway.storage.blobs;
    const get = blobs.get.bind(blobs);
    blobs.get = async () => {
      throw new Error('EIO: the disk failed');
    };

    await assert.rejects(client.images.generate(B64_REQUEST), (error: unknown) => {
      assert.ok(error instanceof OpenAI.InternalServerError);
      assert.equal(error.status, 500);
      assert.match(error.message, /could not be read back from storage/);
      assert.doesNotMatch(error.message, /EIO/, "storage's own message stays in the gateway");
      return true;
    });
    const [failed] = await rowsOf(gateway, tokenId);
    assert.equal(failed?.status, 500);
    assert.equal(failed?.imagesBilled, 0);
    assert.equal(failed?.costMicros, 0);

    blobs.get = get;
    const answer = await client.images.generate(B64_REQUEST);
    const png = Buffer.from(answer.data?.[0]?.b64_json ?? '', 'base64');
    assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
    const rows = await rowsOf(gateway, tokenId, 2);
    assert.deepEqual(rows.map((row) => [row.status, row.imagesBilled]).sort(), [
      [200, 1],
      [500, 0],
    ]);
  });

  it('closes what it opened when only one of two images is gone', async (t) => {
    const { gateway, client, tokenId } = await openGateway(t);
    await gateway.admission.limits.update(tokenId, { imageQuota: 2 });
    const blobs = gateway.storage.blobs;
    const get = blobs.get.bind(blobs);
    const opened: { destroyed: boolean }[] = [];
    let calls = 0;
    blobs.get = async (key) => {
      calls += 1;
      if (calls === 2) return undefined;
      const blob = await get(key);
      if (blob !== undefined) opened.push(blob.stream);
      return blob;
    };
    await assert.rejects(client.images.generate({ ...B64_REQUEST, n: 2 }), /read back/);
    assert.equal(opened.length, 1);
    assert.equal(opened[0]?.destroyed, true, 'the image that was opened is closed again');
    const [row] = await rowsOf(gateway, tokenId);
    assert.deepEqual([row?.status, row?.imagesBilled], [500, 0]);
  });

  it('closes the images it opened when the caller leaves before the bill, and bills nothing', async (t) => {
    const { gateway, tokenId, baseURL, token } = await openGateway(t);
    const blobs = gateway.storage.blobs;
    const get = blobs.get.bind(blobs);
    const opening = gate();
    const proceed = gate();
    const opened: PassThrough[] = [];
    blobs.get = async (key) => {
      const blob = await get(key);
      if (blob !== undefined) opened.push(blob.stream as PassThrough);
      opening.open();
      await proceed.promise;
      return blob;
    };
    const leaving = new AbortController();
    const request = fetch(`${baseURL}/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(B64_REQUEST),
      signal: leaving.signal,
    });
    await opening.promise;
    leaving.abort();
    await assert.rejects(request, /aborted/i);
    // The gateway sees the connection close before the images are handed back.
    await connectionsOpen(gateway.app.server, 0);
    proceed.open();
    await eventually(() => opened.length === 1 && opened[0]?.destroyed === true);
    const [row] = await rowsOf(gateway, tokenId);
    assert.deepEqual([row?.status, row?.imagesBilled], [CALLER_GONE_STATUS, 0]);
  });

  it('closes the images when the caller leaves in the middle of the answer, and bills nothing', async (t) => {
    const { gateway, baseURL, token, tokenId } = await openGateway(t);
    const blobs = gateway.storage.blobs;
    // An image whose bytes stop coming: the answer stalls after its first part.
    const stalled = new PassThrough();
    stalled.write(Buffer.alloc(3000, 7));
    blobs.get = async () => ({ size: 1_000_000, stream: stalled });
    const leaving = new AbortController();
    const answer = await fetch(`${baseURL}/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(B64_REQUEST),
      signal: leaving.signal,
    });
    assert.equal(answer.status, 200);
    const reader = answer.body?.getReader();
    const first = await reader?.read();
    assert.match(Buffer.from(first?.value ?? []).toString(), /"b64_json":"/);
    leaving.abort();
    await eventually(() => stalled.destroyed);
    const [row] = await rowsOf(gateway, tokenId);
    assert.deepEqual(
      [row?.status, row?.errorCode, row?.imagesDelivered, row?.imagesBilled],
      [CALLER_GONE_STATUS, 'CallerGone', 0, 0],
    );
  });
});
