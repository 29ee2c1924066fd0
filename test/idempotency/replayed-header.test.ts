import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { testImage } from '../e2e/e2e-helpers.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const BOUNDARY = 'replayed-header';

function editForm(image: Buffer): Buffer {
  const text = (name: string, value: string) =>
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  return Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
    ),
    image,
    Buffer.from(`\r\n${text('model', MODEL_B)}${text('prompt', 'winter')}--${BOUNDARY}--\r\n`),
  ]);
}

/**
 * `Idempotent-Replayed: true` says that an answer is the first request's result again: a refusal,
 * or any other error answer, never carries it, on either front door.
 */
describe('Idempotent-Replayed over a socket', () => {
  let gateway: TestGateway;
  let base: string;
  let authorization: string;
  let image: Buffer;

  before(async () => {
    gateway = await startTestGateway();
    base = await gateway.listen();
    authorization = await gateway.bearer();
    image = await testImage(256, 256, 0, 'png');
  });
  after(() => gateway.close());

  async function post(path: string, key: string, body: object | Buffer) {
    const form = Buffer.isBuffer(body);
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        authorization,
        'idempotency-key': key,
        'content-type': form ? `multipart/form-data; boundary=${BOUNDARY}` : 'application/json',
      },
      body: form ? body : JSON.stringify(body),
    });
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed'),
      text: await response.text(),
    };
  }

  it('DashScope door: a replay says so; the key with another body, or a body of the other door, does not', async () => {
    const body = modelABody({ n: 1, size: '1024*1024' });
    const first = await post(GENERATION_URL, 'dashscope-key', body);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.replayed, null);
    const again = await post(GENERATION_URL, 'dashscope-key', body);
    assert.deepEqual([again.status, again.replayed], [200, 'true']);

    const otherBody = await post(GENERATION_URL, 'dashscope-key', modelABody({ n: 2 }));
    assert.deepEqual([otherBody.status, otherBody.replayed], [400, null], otherBody.text);

    const openAiBody = { model: MODEL_A, prompt: 'a fox', size: '1024x1024' };
    assert.equal((await post('/v1/images/generations', 'shared-key', openAiBody)).status, 200);
    const crossed = await post(GENERATION_URL, 'shared-key', openAiBody);
    assert.deepEqual([crossed.status, crossed.replayed], [400, null], crossed.text);
  });

  it('OpenAI door: a replay says so; the key with another body, file or door does not', async () => {
    const body = { model: MODEL_B, prompt: 'a lighthouse', size: '512x512' };
    const first = await post('/v1/images/generations', 'openai-key', body);
    assert.deepEqual([first.status, first.replayed], [200, null], first.text);
    const again = await post('/v1/images/generations', 'openai-key', body);
    assert.deepEqual([again.status, again.replayed], [200, 'true']);

    const otherBody = await post('/v1/images/generations', 'openai-key', { ...body, n: 2 });
    assert.deepEqual([otherBody.status, otherBody.replayed], [400, null], otherBody.text);

    const dashScopeBody = modelABody({ n: 1, size: '1024*1024' });
    assert.equal((await post(GENERATION_URL, 'crossed-key', dashScopeBody)).status, 200);
    const crossed = await post('/v1/images/generations', 'crossed-key', dashScopeBody);
    assert.deepEqual([crossed.status, crossed.replayed], [400, null], crossed.text);

    const edit = await post('/v1/images/edits', 'edit-key', editForm(image));
    assert.equal(edit.status, 200, edit.text);
    const editAgain = await post('/v1/images/edits', 'edit-key', editForm(image));
    assert.deepEqual([editAgain.status, editAgain.replayed], [200, 'true']);
    const otherFile = await post(
      '/v1/images/edits',
      'edit-key',
      editForm(await testImage(256, 256, 60, 'png')),
    );
    assert.deepEqual([otherFile.status, otherFile.replayed], [400, null], otherFile.text);
  });

  it('OpenAI door: a b64_json replay whose images cannot be read back is a 500 that is not a replay', async () => {
    const body = {
      model: MODEL_B,
      prompt: 'a harbour',
      size: '512x512',
      response_format: 'b64_json',
    };
    assert.equal((await post('/v1/images/generations', 'b64-key', body)).status, 200);
    const blobs = gateway.storage.blobs;
    const get = blobs.get.bind(blobs);
    blobs.get = async () => undefined;
    try {
      const again = await post('/v1/images/generations', 'b64-key', body);
      assert.deepEqual([again.status, again.replayed], [500, null], again.text);
    } finally {
      blobs.get = get;
    }
    const restored = await post('/v1/images/generations', 'b64-key', body);
    assert.deepEqual([restored.status, restored.replayed], [200, 'true']);
  });
});
