import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { PREVIEWS_AT_ONCE } from '../../src/admission/console-call-bounds.js';
import { eventually } from '../helpers/waits.js';
import { readGauges } from '../helpers/metrics-gauges.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { bytesHandler, type ImageServer, startImageServer } from '../inputs/image-server.js';
import { makePng } from '../inputs/image-fixtures.js';
import { sdkFormFields, uploadCertificate } from '../helpers/sdk-uploads.js';
import { MODEL_B } from '../../src/domain/models.js';

// docs/operations.md (Web console, "Endpoints of its own"): POST /console/api/preview fetches an image URL through
// the inputs stage a generation uses, so that the playground can show it (and draw boxes on it)
// under its Content-Security-Policy; it and the validator count against a console allowance.

const PREVIEW = '/console/api/preview';

describe('POST /console/api/preview', () => {
  let gateway: TestGateway;
  let baseUrl: string;
  let images: ImageServer;
  let png: Buffer;
  let caller: string;
  let admin: string;
  const held: ServerResponse[] = [];

  before(async () => {
    png = await makePng(320, 240);
    images = await startImageServer();
    gateway = await startTestGateway({ env: { IMAGEGATE_ALLOW_PRIVATE_IMAGE_URLS: 'true' } });
    baseUrl = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    caller = await gateway.bearer();
    admin = await gateway.bearer({ admin: true });
  });
  after(async () => {
    for (const response of held) response.destroy();
    await gateway.close();
    await images.close();
  });

  const preview = (image: unknown, authorization = caller, signal?: AbortSignal) =>
    fetch(`${baseUrl}${PREVIEW}`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ image }),
      ...(signal === undefined ? {} : { signal }),
    });

  /** A URL whose answer the image server holds open until the test ends it. */
  const heldUrl = (path: string) =>
    images.serve(path, (_request, response) => {
      held.push(response);
      response.writeHead(200, { 'content-type': 'image/png' });
    });

  it('answers the bytes a generation would load from the URL, with their type and size', async () => {
    const url = images.serve('/photo.png', bytesHandler(png, { contentType: 'image/png' }));
    const answer = await preview(url);
    assert.equal(answer.status, 200, await answer.clone().text());
    assert.equal(answer.headers.get('content-type'), 'image/png');
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    assert.deepEqual(
      [answer.headers.get('x-image-width'), answer.headers.get('x-image-height')],
      ['320', '240'],
    );
    assert.ok(Buffer.from(await answer.arrayBuffer()).equals(png));
  });

  it('refuses what a generation would refuse, naming `image`, with the error table’s codes', async () => {
    const notAnImage = images.serve('/page.html', bytesHandler(Buffer.from('<html></html>')));
    const tooSmall = images.serve('/tiny.png', bytesHandler(await makePng(100, 100)));
    for (const [image, status, code] of [
      [notAnImage, 400, 'InvalidImage'],
      [tooSmall, 400, 'InvalidImage'],
      ['ftp://example.com/a.png', 400, 'InvalidURL'],
      ['http://169.254.169.254/latest/meta-data', 400, 'InvalidURL'],
      [`${images.serve('/missing', (_q, r) => r.writeHead(404).end())}`, 400, 'InvalidURL'],
      [undefined, 400, 'InvalidParameter'],
      [42, 400, 'InvalidParameter'],
    ] as const) {
      const answer = await preview(image);
      const body = (await answer.json()) as { code: string; message: string };
      assert.deepEqual([answer.status, body.code], [status, code], `${image}: ${body.message}`);
      assert.match(body.message, /^image/, `${image}: ${body.message}`);
    }
  });

  it('refuses a body larger than an image URL, and a caller without a token', async () => {
    const large = await preview(`https://example.com/${'a'.repeat(20_000)}`);
    assert.equal(large.status, 413);
    const anonymous = await fetch(`${baseUrl}${PREVIEW}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ image: 'https://example.com/a.png' }),
    });
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { code: string }).code, 'InvalidApiKey');
  });

  it('previews one of the gateway’s own results, read from storage', async () => {
    const generated = await gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: { authorization: caller },
      payload: modelABody({ n: 1 }),
    });
    const url = generated.json().output.choices[0].message.content[0].image as string;
    const answer = await preview(url);
    assert.equal(answer.status, 200, await answer.clone().text());
    assert.equal(answer.headers.get('content-type'), 'image/png');
  });

  it('previews the caller’s own upload by its oss:// key, and not another token’s', async () => {
    const port = Number(new URL(baseUrl).port);
    const certificate = await uploadCertificate(port, '/vendor', MODEL_B, caller);
    const form = new FormData();
    for (const { name, value } of sdkFormFields(certificate, 'own.png'))
      form.append(name, String(value));
    form.append('file', new Blob([png], { type: 'image/png' }), 'own.png');
    // Listening on a port given at random, this gateway's configuration names port 0.
    const uploadHost = new URL(new URL(certificate.upload_host).pathname, baseUrl);
    const stored = await fetch(uploadHost, { method: 'POST', body: form });
    assert.equal(stored.status, 200, await stored.text());
    const key = `oss://${certificate.upload_dir}/own.png`;
    const own = await preview(key);
    assert.equal(own.status, 200, await own.clone().text());
    assert.ok(Buffer.from(await own.arrayBuffer()).equals(png));
    const other = await preview(key, await gateway.bearer({ name: 'someone else' }));
    const refused = (await other.json()) as { code: string; message: string };
    assert.deepEqual([other.status, refused.code], [400, 'InvalidURL'], refused.message);
    assert.match(refused.message, /^image/);
  });

  it(`holds at most ${PREVIEWS_AT_ONCE} previews of one token at once; another token is not held up, and a caller who leaves frees its place and its fetch`, async () => {
    const leaving = Array.from({ length: PREVIEWS_AT_ONCE }, () => new AbortController());
    const pending = leaving.map((controller, index) =>
      preview(heldUrl(`/held-${index}`), caller, controller.signal).catch(() => undefined),
    );
    await eventually(
      () => images.hits('/held-0') + images.hits('/held-1') === PREVIEWS_AT_ONCE,
      10_000,
      'both previews reach the image server',
    );
    const third = await preview(images.serve('/third.png', bytesHandler(png)));
    assert.equal(third.status, 429);
    assert.equal(((await third.json()) as { code: string }).code, 'Throttling.RateQuota');
    assert.equal(third.headers.get('retry-after'), '1');

    const other = await gateway.bearer({ name: 'other' });
    assert.equal((await preview(images.serve('/other.png', bytesHandler(png)), other)).status, 200);

    for (const controller of leaving) controller.abort();
    await Promise.all(pending);
    await eventually(
      async () =>
        (await readGauges(baseUrl, { authorization: admin })).imagegate_image_fetches_in_flight ===
        0,
      10_000,
      'the abandoned fetches end',
    );
    await eventually(
      async () => (await preview(images.serve('/after.png', bytesHandler(png)))).status === 200,
      10_000,
      'the token previews again',
    );
  });
});

describe('the console calls allowance (IMAGEGATE_CONSOLE_CALLS_PER_MINUTE)', () => {
  it('refuses validations past it with 429 and Retry-After, and leaves the token’s requests alone', async (t) => {
    const gateway = await startTestGateway({ env: { IMAGEGATE_CONSOLE_CALLS_PER_MINUTE: '3' } });
    t.after(() => gateway.close());
    const authorization = await gateway.bearer({ limits: { requestsPerMinute: 2 } });
    const validate = () =>
      gateway.app.inject({
        method: 'POST',
        url: '/console/api/validate',
        headers: { authorization },
        payload: modelABody({ n: 1 }),
      });
    for (let call = 0; call < 3; call += 1) {
      const answer = await validate();
      assert.equal(answer.statusCode, 200, answer.body);
      assert.equal(answer.headers['ratelimit-limit'], '3');
    }
    const refused = await validate();
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'Throttling.RateQuota');
    assert.match(refused.json().message, /console calls/);
    assert.ok(Number(refused.headers['retry-after']) >= 1);

    const generated = await gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: { authorization },
      payload: modelABody({ n: 1 }),
    });
    assert.equal(generated.statusCode, 200, 'the validations used none of its 2 requests a minute');
    assert.equal(generated.headers['ratelimit-limit'], '2');
  });
});
