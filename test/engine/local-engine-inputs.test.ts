import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { mapBoxToOutput } from '../../src/engine/local/pixel-box.js';
import { watermarkBox } from '../../src/engine/local/watermark.js';
import { bmp24 } from './bmp-fixtures.js';
import {
  body,
  contains,
  decode,
  encodeAs,
  jobFor,
  loadedImage,
  MODEL_A,
  MODEL_B,
  maxAbsoluteDifference,
  meanAbsoluteDifference,
  pngBytes,
  resized,
  syntheticInput,
  syntheticPixels,
} from './engine-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

const engine = new LocalEngine();

describe('LocalEngine image-to-image', () => {
  it('derives the output from the last input, resized: close to it, far from an unrelated image, not equal', async () => {
    for (const format of ['png', 'jpeg', 'webp'] as const) {
      const input = await syntheticInput(800, 600, 0, format);
      const unrelated = await syntheticInput(800, 600, 3, 'png');
      const requestBody = body(MODEL_A, 'make it autumn', { size: '1024*768' }, 1);
      const output = await outputOf(engine.generate(jobFor(requestBody, { inputs: [input] })));
      const pixels = await decode(pngBytes(output));
      const toInput = meanAbsoluteDifference(pixels, await resized(input.bytes(), 1024, 768));
      const toUnrelated = meanAbsoluteDifference(
        pixels,
        await resized(unrelated.bytes(), 1024, 768),
      );
      assert.ok(toInput > 5, `${format}: visibly changed (${toInput.toFixed(1)})`);
      assert.ok(
        toInput < toUnrelated / 2,
        `${format}: ${toInput.toFixed(1)} vs ${toUnrelated.toFixed(1)}`,
      );
    }
  });

  it('reads BMP inputs: the same pixels as BMP or PNG give the same output bytes', async () => {
    const pixels = syntheticPixels(640, 480, 2);
    const asBmp = loadedImage(bmp24(pixels), 'bmp', 640, 480);
    const asPng = loadedImage(await encodeAs(pixels, 'png'), 'png', 640, 480);
    const requestBody = body(MODEL_A, 'same picture', { size: '1K', watermark: true }, 1);
    const fromBmp = await outputOf(engine.generate(jobFor(requestBody, { inputs: [asBmp] })));
    const fromPng = await outputOf(engine.generate(jobFor(requestBody, { inputs: [asPng] })));
    assert.ok(pngBytes(fromBmp).equals(pngBytes(fromPng)));
  });

  it('uses the last of several inputs as the base, and earlier ones change the colours', async () => {
    const last = await syntheticInput(600, 600, 0, 'png', 2);
    const first = await syntheticInput(600, 600, 3, 'jpeg', 0);
    const otherFirst = await syntheticInput(600, 600, 1, 'jpeg', 0);
    const middle = await syntheticInput(300, 600, 2, 'webp', 1);
    const requestBody = body(MODEL_B, 'blend the styles', { size: '768*768' }, 3);
    const output = await decode(
      pngBytes(
        await outputOf(engine.generate(jobFor(requestBody, { inputs: [first, middle, last] }))),
      ),
    );
    const toLast = meanAbsoluteDifference(output, await resized(last.bytes(), 768, 768));
    const toFirst = meanAbsoluteDifference(output, await resized(first.bytes(), 768, 768));
    assert.ok(toLast < toFirst / 2, `${toLast.toFixed(1)} vs ${toFirst.toFixed(1)}`);

    const withOtherReference = await decode(
      pngBytes(
        await outputOf(
          engine.generate(jobFor(requestBody, { inputs: [otherFirst, middle, last] })),
        ),
      ),
    );
    assert.ok(meanAbsoluteDifference(output, withOtherReference) > 3);
  });

  it('takes 9 inputs for model A and answers n images of the last one', async () => {
    const inputs = await Promise.all(
      Array.from({ length: 9 }, (_, index) =>
        syntheticInput(320 + index * 16, 400, index % 4, 'jpeg', index),
      ),
    );
    const requestBody = body(MODEL_A, 'a collage', { size: '1K', n: 2 }, 9);
    const job = jobFor(requestBody, { inputs });
    const output = await outputOf(engine.generate(job));
    assert.equal(output.images.length, 2);
    const pixels = await decode(pngBytes(output, 1));
    assert.deepEqual({ width: pixels.width, height: pixels.height }, job.output);
    const toLast = meanAbsoluteDifference(
      pixels,
      await resized(inputs[8]!.bytes(), pixels.width, pixels.height),
    );
    const toFirst = meanAbsoluteDifference(
      pixels,
      await resized(inputs[1]!.bytes(), pixels.width, pixels.height),
    );
    assert.ok(toLast < toFirst, `${toLast.toFixed(1)} vs ${toFirst.toFixed(1)}`);
  });

  it('derives every image of a sequential set from the last input', async () => {
    const input = await syntheticInput(640, 480, 0, 'jpeg');
    const unrelated = await resized((await syntheticInput(640, 480, 3, 'png')).bytes(), 1024, 768);
    const reference = await resized(input.bytes(), 1024, 768);
    const requestBody = body(
      MODEL_A,
      'four seasons',
      { size: '1024*768', enable_sequential: true, n: 4 },
      1,
    );
    const output = await outputOf(
      engine.generate(jobFor(requestBody, { inputs: [input], seed: 8 })),
    );
    assert.ok(output.images.length >= 1 && output.images.length <= 4);
    for (let index = 0; index < output.images.length; index++) {
      const pixels = await decode(pngBytes(output, index));
      const toInput = meanAbsoluteDifference(pixels, reference);
      assert.ok(
        toInput > 5 && toInput < meanAbsoluteDifference(pixels, unrelated) / 2,
        `image ${index}`,
      );
    }
  });

  it('answers InvalidImage naming the item when an input cannot be decoded', async () => {
    const broken = loadedImage(Buffer.from('not an image at all'), 'png', 800, 600, 0);
    const requestBody = body(MODEL_A, 'x', { size: '1K' }, 1);
    await assert.rejects(
      outputOf(engine.generate(jobFor(requestBody, { inputs: [broken] }))),
      (error) =>
        error instanceof GatewayError &&
        error.code === 'InvalidImage' &&
        error.message.startsWith('input.messages[0].content[0].image:'),
    );
  });
});

describe('LocalEngine interactive editing (bbox_list)', () => {
  const boxes = [
    [100, 50, 380, 260],
    [520, 330, 790, 590],
  ] as const;

  it('leaves the image as the resized input outside the boxes and changes it inside', async () => {
    const input = await syntheticInput(800, 600, 1, 'jpeg');
    const requestBody = body(
      MODEL_A,
      'put a moon here',
      { size: '1200*900', bbox_list: [boxes], watermark: true, n: 2 },
      1,
    );
    const output = await outputOf(engine.generate(jobFor(requestBody, { inputs: [input] })));
    const reference = await resized(input.bytes(), 1200, 900);
    const mapped = boxes.map((box) => mapBoxToOutput(box, input, reference));
    assert.deepEqual(mapped[0], { x: 150, y: 75, width: 420, height: 315 });
    const watermark = watermarkBox(1200, 900);
    for (const index of [0, 1]) {
      const pixels = await decode(pngBytes(output, index));
      const outside = (x: number, y: number) =>
        !mapped.some((box) => contains(box, x, y)) && !contains(watermark, x, y);
      assert.ok(maxAbsoluteDifference(pixels, reference, outside) <= 2, `image ${index} outside`);
      for (const box of mapped) {
        const inside = meanAbsoluteDifference(pixels, reference, (x, y) => contains(box, x, y));
        assert.ok(
          inside > 25,
          `image ${index} inside ${JSON.stringify(box)}: ${inside.toFixed(1)}`,
        );
      }
    }
  });

  it('edits only the last image; boxes on earlier images pick the colours they lend', async () => {
    const halves = syntheticPixels(600, 600, 0);
    for (let pixel = 0; pixel < 600 * 600; pixel++) {
      const red = pixel % 600 < 300;
      halves.data.set(red ? [208, 32, 32] : [32, 64, 208], pixel * 3);
    }
    const reference = loadedImage(await encodeAs(halves, 'png'), 'png', 600, 600, 0);
    const last = await syntheticInput(800, 600, 1, 'png', 1);
    const editBox = [0, 0, 400, 300] as const;
    const render = async (referenceBoxes: number[][]) => {
      const parameters = { size: '1024*768', bbox_list: [referenceBoxes, [editBox]] };
      const requestBody = body(MODEL_A, 'edit', parameters, 2);
      const output = await outputOf(
        engine.generate(jobFor(requestBody, { inputs: [reference, last] })),
      );
      return decode(pngBytes(output));
    };
    const fromRedHalf = await render([[0, 0, 300, 600]]);
    const fromBlueHalf = await render([[300, 0, 600, 600]]);
    const resizedLast = await resized(last.bytes(), 1024, 768);
    const mapped = mapBoxToOutput(editBox, last, resizedLast);
    const outside = (x: number, y: number) => !contains(mapped, x, y);
    assert.ok(maxAbsoluteDifference(fromRedHalf, resizedLast, outside) <= 2);
    assert.ok(maxAbsoluteDifference(fromBlueHalf, resizedLast, outside) <= 2);
    const inside = (x: number, y: number) => contains(mapped, x, y);
    const difference = meanAbsoluteDifference(fromRedHalf, fromBlueHalf, inside);
    assert.ok(difference > 10, `${difference}`);
  });
});
