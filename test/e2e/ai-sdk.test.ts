import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateImage } from 'ai';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { testImage } from './e2e-helpers.js';
import {
  billedImages,
  type FrameworkGateway,
  pngSize,
  startFrameworkGateway,
} from './framework-rig.js';

// The SDK logs each warning to the console as well; the tests read them from the result.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

/**
 * The Vercel AI SDK's `generateImage` with its two providers that speak the OpenAI Images API,
 * each configured as docs/openai.md says: its base URL (`localhost`, as a new user types it) and
 * a gateway token, nothing else. Every image must arrive whole and be billed once.
 */
describe('the AI SDK (ai + @ai-sdk/openai-compatible) against the gateway', () => {
  let running: FrameworkGateway;
  let provider: ReturnType<typeof createOpenAICompatible>;

  before(async () => {
    running = await startFrameworkGateway();
    provider = createOpenAICompatible({
      name: 'imagegate',
      baseURL: running.baseUrl,
      apiKey: running.token,
    });
  });
  after(() => running.close());

  it('generates n images at the size asked, with seed and model options under providerOptions', async () => {
    const generate = (seed: number) =>
      generateImage({
        model: provider.imageModel(MODEL_B),
        prompt: 'a lighthouse at dusk',
        n: 2,
        size: '768x512',
        providerOptions: { imagegate: { seed, prompt_extend: false } },
        maxRetries: 0,
      });
    const first = await generate(42);
    assert.equal(first.images.length, 2);
    for (const image of first.images) assert.deepEqual(await pngSize(image.uint8Array), [768, 512]);
    // The local engine draws from the seed: the same seed draws the same images, another another.
    const same = await generate(42);
    const other = await generate(43);
    assert.deepEqual(
      same.images.map((image) => image.base64),
      first.images.map((image) => image.base64),
    );
    assert.notDeepEqual(
      other.images.map((image) => image.base64),
      first.images.map((image) => image.base64),
    );
    const { billed } = await billedImages(running, 3);
    assert.equal(billed, 6);
  });

  it('edits input images, answered as base64; asked for URLs, downloads them from the gateway', async () => {
    const input = await testImage(384, 256, 0, 'png');
    const before = (await billedImages(running, 3)).billed;
    const edited = await generateImage({
      model: provider.imageModel(MODEL_A),
      prompt: { images: [input, await testImage(256, 256, 40, 'png')], text: 'make it autumn' },
      // A preset goes under providerOptions: generateImage's own size is WIDTHxHEIGHT only.
      providerOptions: { imagegate: { seed: 7, watermark: false, size: '1K' } },
      maxRetries: 0,
    });
    assert.equal(edited.images.length, 1);
    // With input images a preset keeps the last one's aspect ratio (docs/api.md §5.5): square.
    assert.deepEqual(await pngSize(edited.images[0]!.uint8Array), [1024, 1024]);

    // URLs name the host the request was sent to (localhost), which the SDK downloads from as its
    // own origin; 127.0.0.1 would be refused ("URL with IP address is not allowed").
    const asUrls = await generateImage({
      model: provider.imageModel(MODEL_B),
      prompt: { images: [input], text: 'make it winter' },
      n: 2,
      size: '768x512',
      providerOptions: { imagegate: { response_format: 'url' } },
      maxRetries: 0,
    });
    assert.equal(asUrls.images.length, 2);
    for (const image of asUrls.images)
      assert.deepEqual(await pngSize(image.uint8Array), [768, 512]);
    const { billed } = await billedImages(running, 5);
    assert.equal(billed - before, 3);
  });
});

describe('the AI SDK (ai + @ai-sdk/openai) against the gateway', () => {
  let running: FrameworkGateway;
  let provider: ReturnType<typeof createOpenAI>;

  before(async () => {
    running = await startFrameworkGateway();
    provider = createOpenAI({ baseURL: running.baseUrl, apiKey: running.token });
  });
  after(() => running.close());

  it('generates n images at the size asked, one request each; it drops the seed and says so', async () => {
    const generate = () =>
      generateImage({
        model: provider.image(MODEL_B),
        prompt: 'a lighthouse at dusk',
        n: 2,
        size: '768x512',
        seed: 42,
        maxRetries: 0,
      });
    const first = await generate();
    assert.equal(first.images.length, 2);
    for (const image of first.images) assert.deepEqual(await pngSize(image.uint8Array), [768, 512]);
    assert.ok(
      first.warnings.some(
        (warning) => warning.type === 'unsupported' && warning.feature === 'seed',
      ),
      JSON.stringify(first.warnings),
    );
    // Without the seed the gateway picks one per request: the images differ.
    const again = await generate();
    assert.notDeepEqual(
      again.images.map((image) => image.base64),
      first.images.map((image) => image.base64),
    );
    const { billed } = await billedImages(running, 4);
    assert.equal(billed, 4);
  });

  it('edits input images: the edits answer is base64, which is all its schema reads', async () => {
    const edited = await generateImage({
      model: provider.image(MODEL_B),
      prompt: { images: [await testImage(384, 256, 0, 'png')], text: 'make it winter' },
      size: '768x512',
      maxRetries: 0,
    });
    assert.equal(edited.images.length, 1);
    assert.deepEqual(await pngSize(edited.images[0]!.uint8Array), [768, 512]);
    const { rows } = await billedImages(running, 5);
    assert.equal(rows.filter((row) => row.mode !== 'text-to-image').length, 1);
  });
});
