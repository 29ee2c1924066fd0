import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DallEAPIWrapper } from '@langchain/openai';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import {
  billedImages,
  type FrameworkGateway,
  pngSize,
  startFrameworkGateway,
} from './framework-rig.js';

/**
 * LangChain JS's image tool, `DallEAPIWrapper` from @langchain/openai, configured as
 * docs/openai.md says: `baseUrl` (naming `localhost`), `apiKey` a gateway token, and our model.
 * It always sends `style` and `quality` with DALL-E 3's defaults, `vivid` and `standard`.
 */
describe('LangChain (@langchain/openai DallEAPIWrapper) against the gateway', () => {
  let running: FrameworkGateway;

  before(async () => {
    running = await startFrameworkGateway();
  });
  after(() => running.close());

  it('generates an image at the size asked and answers its URL, which serves the PNG', async () => {
    const tool = new DallEAPIWrapper({
      apiKey: running.token,
      baseUrl: running.baseUrl,
      model: MODEL_B,
      size: '1792x1024',
    });
    const url: unknown = await tool.invoke('a lighthouse at dusk');
    assert.equal(typeof url, 'string');
    assert.ok(String(url).startsWith(`${new URL(running.baseUrl).origin}/images/`), String(url));
    const response = await fetch(String(url));
    assert.equal(response.status, 200);
    assert.deepEqual(await pngSize(new Uint8Array(await response.arrayBuffer())), [1792, 1024]);
    assert.equal((await billedImages(running, 1)).billed, 1);
  });

  it('answers base64 and takes style natural; n = 2 is two requests', async () => {
    const tool = new DallEAPIWrapper({
      apiKey: running.token,
      baseUrl: running.baseUrl,
      model: MODEL_A,
      size: '1024x1024',
      style: 'natural',
      n: 2,
      responseFormat: 'b64_json',
    });
    const images: unknown = await tool.invoke('a red fox in the snow');
    assert.ok(Array.isArray(images), JSON.stringify(images));
    assert.equal(images.length, 2);
    for (const image of images as { image_url: { url: string } }[])
      assert.deepEqual(await pngSize(Buffer.from(image.image_url.url, 'base64')), [1024, 1024]);
    const { billed } = await billedImages(running, 3);
    assert.equal(billed, 3);
  });
});
