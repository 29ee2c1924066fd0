import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import {
  body,
  decode,
  jobFor,
  MODEL_A,
  MODEL_B,
  meanAbsoluteDifference,
  pngBytes,
  syntheticInput,
} from './engine-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

const engine = new LocalEngine();
const PROMPT = 'a red fox in the snow, watercolour';

describe('LocalEngine sizes', () => {
  const cases = [
    {
      name: 'model A preset 1K, square',
      body: body(MODEL_A, PROMPT, { size: '1K' }),
      w: 1024,
      h: 1024,
    },
    {
      name: 'model A custom 768*1024',
      body: body(MODEL_A, PROMPT, { size: '768*1024' }),
      w: 768,
      h: 1024,
    },
    {
      name: 'model A custom 1:8',
      body: body(MODEL_A, PROMPT, { size: '272*2176' }),
      w: 272,
      h: 2176,
    },
    {
      name: 'model B custom 512*1024',
      body: body(MODEL_B, PROMPT, { size: '512*1024' }),
      w: 512,
      h: 1024,
    },
  ];
  for (const testCase of cases) {
    it(`produces ${testCase.w}x${testCase.h} for ${testCase.name}`, async () => {
      const output = await outputOf(engine.generate(jobFor(testCase.body)));
      assert.equal(output.width, testCase.w);
      assert.equal(output.height, testCase.h);
      const pixels = await decode(pngBytes(output));
      assert.equal(pixels.width, testCase.w);
      assert.equal(pixels.height, testCase.h);
    });
  }

  it('keeps the last input image aspect ratio for a preset with inputs', async () => {
    const inputs = [
      await syntheticInput(400, 300, 0, 'png', 0),
      await syntheticInput(600, 300, 1, 'jpeg', 1),
    ];
    const job = jobFor(body(MODEL_A, PROMPT, { size: '1K' }, 2), { inputs });
    const output = await outputOf(engine.generate(job));
    assert.deepEqual({ width: output.width, height: output.height }, job.output);
    assert.equal(Math.round((output.width / output.height) * 10), 20);
    const pixels = await decode(pngBytes(output));
    assert.deepEqual({ width: pixels.width, height: pixels.height }, job.output);
  });

  it('renders 4K text-to-image at 4096x4096', async () => {
    const output = await outputOf(
      engine.generate(jobFor(body(MODEL_A, PROMPT, { size: '4K', watermark: true }))),
    );
    assert.equal(output.width, 4096);
    assert.equal(output.height, 4096);
    const pixels = await decode(pngBytes(output));
    assert.equal(pixels.width * pixels.height, 4096 * 4096);
  });
});

describe('LocalEngine determinism', () => {
  const small = { size: '768*768' };

  it('gives byte-identical PNGs for the same request and seed, across engine instances', async () => {
    const inputs = [await syntheticInput(500, 400, 2, 'jpeg')];
    const requestBody = body(MODEL_A, PROMPT, { ...small, n: 2, watermark: true }, 1);
    const first = await outputOf(engine.generate(jobFor(requestBody, { inputs, seed: 99 })));
    const second = await outputOf(
      new LocalEngine().generate(jobFor(requestBody, { inputs, seed: 99 })),
    );
    assert.equal(first.images.length, 2);
    for (const index of [0, 1]) {
      assert.ok(pngBytes(first, index).equals(pngBytes(second, index)), `image ${index}`);
    }
  });

  it('gives a clearly different image for another seed or another prompt', async () => {
    const reference = await decode(
      pngBytes(await outputOf(engine.generate(jobFor(body(MODEL_A, PROMPT, small), { seed: 1 })))),
    );
    const otherSeed = await decode(
      pngBytes(await outputOf(engine.generate(jobFor(body(MODEL_A, PROMPT, small), { seed: 2 })))),
    );
    const otherPrompt = await decode(
      pngBytes(
        await outputOf(
          engine.generate(jobFor(body(MODEL_A, 'a lighthouse at dusk', small), { seed: 1 })),
        ),
      ),
    );
    assert.ok(meanAbsoluteDifference(reference, otherSeed) > 20);
    assert.ok(meanAbsoluteDifference(reference, otherPrompt) > 20);
  });

  it('lets the parameters that change a model output change the image', async () => {
    const render = async (requestBody: object) =>
      decode(pngBytes(await outputOf(engine.generate(jobFor(requestBody, { seed: 5 })))));
    const thinking = await render(body(MODEL_A, PROMPT, { ...small, thinking_mode: true }));
    const quick = await render(body(MODEL_A, PROMPT, { ...small, thinking_mode: false }));
    assert.ok(meanAbsoluteDifference(thinking, quick) > 10);
    const plain = await render(body(MODEL_B, PROMPT, { size: '768*768' }));
    const negative = await render(
      body(MODEL_B, PROMPT, { size: '768*768', negative_prompt: 'blurry' }),
    );
    assert.ok(meanAbsoluteDifference(plain, negative) > 10);
  });
});

describe('LocalEngine image counts', () => {
  it('produces exactly n different images in normal mode (model A)', async () => {
    const output = await outputOf(
      engine.generate(jobFor(body(MODEL_A, PROMPT, { size: '768*768', n: 3 }))),
    );
    assert.equal(output.images.length, 3);
    const images = await Promise.all([0, 1, 2].map((index) => decode(pngBytes(output, index))));
    for (const [a, b] of [
      [0, 1],
      [0, 2],
      [1, 2],
    ] as const) {
      assert.ok(meanAbsoluteDifference(images[a]!, images[b]!) > 10, `images ${a} and ${b}`);
    }
  });

  it('produces exactly n images for model B', async () => {
    const output = await outputOf(
      engine.generate(jobFor(body(MODEL_B, PROMPT, { size: '512*512', n: 4 }))),
    );
    assert.equal(output.images.length, 4);
    assert.ok(output.images.every((image) => image.kind === 'png'));
  });

  it('produces between 1 and n images in sequential mode, the count following prompt and seed', async () => {
    const counts = new Set<number>();
    for (let seed = 0; seed < 12; seed++) {
      const job = jobFor(
        body(MODEL_A, PROMPT, { size: '768*768', enable_sequential: true, n: 4 }),
        { seed },
      );
      const output = await outputOf(engine.generate(job));
      assert.ok(output.images.length >= 1 && output.images.length <= 4, `seed ${seed}`);
      counts.add(output.images.length);
      if (output.images.length >= 2) {
        const first = await decode(pngBytes(output, 0));
        const second = await decode(pngBytes(output, 1));
        assert.ok(meanAbsoluteDifference(first, second) > 5, `seed ${seed}: images differ`);
      }
    }
    assert.ok(counts.size >= 2, `counts vary with the seed, got ${[...counts].join(', ')}`);
  });
});

describe('LocalEngine cancellation', () => {
  it('throws the signal reason when the request is aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('client went away');
    controller.abort(reason);
    await assert.rejects(
      outputOf(
        engine.generate(
          jobFor(body(MODEL_A, PROMPT, { size: '768*768' }), { signal: controller.signal }),
        ),
      ),
      (error) => error === reason,
    );
  });
});
