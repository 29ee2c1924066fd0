import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import {
  type BodyDroppingDashScope,
  startBodyDroppingDashScope,
} from '../helpers/body-dropping-dashscope.js';
import { eventually } from '../helpers/billing-gateway.js';
import { prepareGatewayHome } from '../helpers/gateway-home.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startGatewayProcess } from '../scale-out/gateway-process.js';

const MB = 1024 * 1024;
/** Nine noise PNGs of 1600 x 1600: 92 MB of data URLs, well past the release's 64 MiB of slack. */
const IMAGES = 9;
const SIDE = 1600;

async function largeBody(): Promise<Buffer> {
  const png = await sharp(randomBytes(SIDE * SIDE * 3), {
    raw: { width: SIDE, height: SIDE, channels: 3 },
  })
    .png({ compressionLevel: 0 })
    .toBuffer();
  const image = `data:image/png;base64,${png.toString('base64')}`;
  const content = [...Array.from({ length: IMAGES }, () => ({ image })), { text: 'calmer' }];
  return Buffer.from(JSON.stringify(modelABody(undefined, content)));
}

function post(url: string, authorization: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${url}${GENERATION_URL}`, {
      method: 'POST',
      agent: false,
      headers: { authorization, 'content-type': 'application/json' },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.end(body);
  });
}

/** What V8 counts outside its heap in the gateway process: Buffers and external strings. */
async function externalBytes(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^nodejs_external_memory_bytes (\S+)$/m.exec(text)?.[1]);
}

describe('memory after a burst of large bodies', () => {
  let upstream: BodyDroppingDashScope;
  before(async () => {
    upstream = await startBodyDroppingDashScope();
  });
  after(() => upstream.close());

  it('a quiet gateway process frees the dead bodies of a burst without any further traffic', async (t) => {
    const home = await prepareGatewayHome(t, upstream);
    const gateway = await startGatewayProcess({ ...home.env, IMAGEGATE_METRICS: 'public' });
    t.after(() => gateway.child.kill('SIGKILL'));
    const body = await largeBody();
    assert.equal(await post(gateway.url, home.authorization, body), 200);

    const left = await externalBytes(gateway.url);
    assert.ok(left > 64 * MB, `the burst's data URLs are still in memory: ${left} bytes`);
    // Only the gateway's own regular look can free them: nothing else allocates meanwhile.
    await eventually(async () => (await externalBytes(gateway.url)) < 32 * MB, 30_000);
  });
});
