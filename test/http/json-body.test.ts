import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { describe, it, type TestContext } from 'node:test';
import sharp from 'sharp';
import { dashScopeChannelEnv } from '../faults/fault-rig.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startTestGateway } from '../helpers/test-gateway.js';

/** A PNG of noise, so that it does not compress: about 3 bytes per pixel. */
async function noisePngDataUrl(side: number): Promise<string> {
  const png = await sharp(randomBytes(side * side * 3), {
    raw: { width: side, height: side, channels: 3 },
  })
    .png({ compressionLevel: 0 })
    .toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

interface Answer {
  status: number;
  body: { code?: string; message?: string };
}

/** POSTs `body` over a socket in chunks of `chunkBytes`, with or without a declared length. */
function postInChunks(
  url: string,
  authorization: string,
  body: string,
  options: { chunkBytes: number; declareLength: boolean },
): Promise<Answer> {
  const bytes = Buffer.from(body);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${url}${GENERATION_URL}`,
      {
        method: 'POST',
        headers: {
          authorization,
          'content-type': 'application/json',
          ...(options.declareLength ? { 'content-length': String(bytes.length) } : {}),
        },
      },
      (response) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(parts).toString('utf8')) as Answer['body'],
          }),
        );
      },
    );
    request.on('error', reject);
    for (let start = 0; start < bytes.length; start += options.chunkBytes)
      request.write(bytes.subarray(start, start + options.chunkBytes));
    request.end();
  });
}

async function gatewayBeforeFake(t: TestContext) {
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const gateway = await startTestGateway({ env: await dashScopeChannelEnv(t, fake) });
  t.after(() => gateway.close());
  return { fake, gateway, url: await gateway.listen(), authorization: await gateway.bearer() };
}

describe('JSON bodies on the generation route', () => {
  it('forwards large data URLs byte for byte, however the body arrives', async (t) => {
    const { fake, url, authorization } = await gatewayBeforeFake(t);
    const images = [await noisePngDataUrl(300), await noisePngDataUrl(250)];
    assert.ok((images[0]?.length ?? 0) > 64 * 1024, 'longer than what is set aside');
    const body = JSON.stringify(
      modelABody({ n: 1 }, [
        { image: images[0] as string },
        { text: 'join them\n"side by side"' },
        { image: images[1] as string },
      ]),
    );
    for (const [chunkBytes, declareLength] of [
      [1000, true],
      [65_536, false],
      [7, true],
    ] as const) {
      const answer = await postInChunks(url, authorization, body, { chunkBytes, declareLength });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const sent = JSON.parse(fake.submissions().at(-1)?.body.toString('utf8') ?? '{}') as {
        input: { messages: { content: { image?: string; text?: string }[] }[] };
      };
      const content = sent.input.messages[0]?.content ?? [];
      const forwarded = content.flatMap((item) => (item.image === undefined ? [] : [item.image]));
      assert.equal(forwarded.length, 2, JSON.stringify(content.map((item) => Object.keys(item))));
      // Compared without assert's diff: a failure would print half a megabyte.
      assert.ok(forwarded[0] === images[0] && forwarded[1] === images[1], 'images unchanged');
      assert.ok(content.some((item) => item.text === 'join them\n"side by side"'));
    }
  });

  it('names the image whose set-aside base64 is broken, and refuses long non-JSON alike', async (t) => {
    const { fake, url, authorization } = await gatewayBeforeFake(t);
    const image = await noisePngDataUrl(300);
    const middle = Math.floor(image.length / 2);
    const broken = `${image.slice(0, middle)}!${image.slice(middle + 1)}`;
    const refused = await postInChunks(
      url,
      authorization,
      JSON.stringify(modelABody(undefined, [{ image: broken }, { text: 'x' }])),
      { chunkBytes: 4096, declareLength: true },
    );
    assert.equal(refused.status, 400);
    assert.match(refused.body.message ?? '', /input\.messages\[0\]\.content\[0\]\.image/);

    const raw = JSON.stringify(modelABody(undefined, [{ image }, { text: 'x' }]));
    // A raw line break inside the long string: JSON.parse would refuse the whole text.
    const withNewline = raw.replace('base64,', 'base64,\n');
    const invalid = await postInChunks(url, authorization, withNewline, {
      chunkBytes: 4096,
      declareLength: false,
    });
    assert.equal(invalid.status, 400);
    assert.deepEqual(
      [invalid.body.code, invalid.body.message],
      ['InvalidParameter', 'body: is not valid JSON'],
    );
    assert.equal(fake.submissions().length, 0, 'nothing was sent upstream');
  });
});
