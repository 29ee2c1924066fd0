import assert from 'node:assert/strict';
import sharp from 'sharp';
import type { UsageRow } from '../../src/domain/usage-row.js';
import { eventually } from '../helpers/waits.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * A whole gateway for a client framework, configured as its users do: the base URL names
 * `localhost` (what a new user types), and the key is a gateway token. Nothing else is set.
 */
export interface FrameworkGateway {
  gateway: TestGateway;
  /** `http://localhost:<port>/v1`, the OpenAI base URL the frameworks are given. */
  baseUrl: string;
  token: string;
  tokenId: string;
  close(): Promise<void>;
}

export async function startFrameworkGateway(): Promise<FrameworkGateway> {
  const gateway = await startTestGateway();
  const { port } = new URL(await gateway.listen());
  const { token, record } = await gateway.services.tokenIssuer.issue({
    name: 'framework',
    account: 'acme',
    admin: false,
    expiresInSeconds: undefined,
  });
  return {
    gateway,
    baseUrl: `http://localhost:${port}/v1`,
    token,
    tokenId: record.id,
    close: () => gateway.close(),
  };
}

/** Decodes image bytes a framework handed back: they must be a whole PNG; returns its size. */
export async function pngSize(bytes: Uint8Array): Promise<[number, number]> {
  const { format, width, height } = await sharp(bytes).metadata();
  assert.equal(format, 'png');
  // Decoding every pixel fails on a cut or corrupted image, which the header alone would not show.
  const { info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  assert.deepEqual([info.width, info.height], [width, height]);
  return [info.width, info.height];
}

/**
 * The usage ledger's rows of the token once `requests` of them are written, and what they billed:
 * every request answered 200 at the OpenAI door, and billed exactly the images it delivered.
 */
export async function billedImages(
  running: FrameworkGateway,
  requests: number,
): Promise<{ rows: UsageRow[]; billed: number }> {
  const listed = async () => {
    await running.gateway.admission.ledger.flush();
    return running.gateway.admission.usage.list({ tokenId: running.tokenId }, 100);
  };
  // A base64 answer is billed once it was handed over: its row may follow the answer by a moment.
  await eventually(async () => (await listed()).length >= requests, 30_000, `${requests} rows`);
  const rows = await listed();
  assert.equal(rows.length, requests, JSON.stringify(rows));
  for (const row of rows) {
    assert.deepEqual(
      [row.status, row.frontDoor, row.replayed, row.imagesBilled],
      [200, 'openai', false, row.imagesDelivered],
    );
  }
  return { rows, billed: rows.reduce((sum, row) => sum + row.imagesBilled, 0) };
}
