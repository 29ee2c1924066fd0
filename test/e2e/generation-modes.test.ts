import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { modelABody, modelBBody } from '../helpers/requests.js';
import {
  dataUrl,
  fetchPng,
  generate,
  imageUrls,
  meanDifference,
  resizedPixels,
  type RunningGateway,
  serveImages,
  startRunningGateway,
  testImage,
} from './e2e-helpers.js';

describe('every mode of both models, end to end over a socket', () => {
  let running: RunningGateway;
  let landscape: Buffer;
  let portrait: Buffer;
  let server: Awaited<ReturnType<typeof serveImages>>;

  before(async () => {
    running = await startRunningGateway();
    landscape = await testImage(800, 400, 0);
    portrait = await testImage(300, 600, 90);
    server = await serveImages({ 'landscape.jpg': landscape, 'portrait.jpg': portrait });
  });
  after(async () => {
    await running.close();
    await server.close();
  });

  it('model A text-to-image: 1K square PNG behind a signed URL, with model A usage', async () => {
    const reply = await generate(running, modelABody({ size: '1K', seed: 7 }));
    const [url] = imageUrls(reply);
    assert.equal(reply.body.output.finished, true);
    assert.equal(reply.body.output.choices[0]?.message.content[0]?.type, 'image');
    assert.match(String(url), /\/images\/[\w-]+\.png\?expires=\d+&signature=[\w-]+$/);
    const png = await fetchPng(String(url));
    assert.deepEqual([png.width, png.height], [1024, 1024]);
    const { usage } = reply.body;
    assert.equal(usage.image_count, 1);
    assert.equal(usage.size, '1024*1024');
    for (const field of ['input_tokens', 'output_tokens', 'total_tokens'] as const)
      assert.ok(Number.isInteger(usage[field]));
    assert.equal(usage.total_tokens, Number(usage.input_tokens) + Number(usage.output_tokens));
  });

  it('model A text-to-image: the same seed gives byte-identical PNGs, another seed or prompt differs', async () => {
    const body = (seed: number, text = 'a quiet harbour') =>
      modelABody({ size: '768*768', seed }, [{ text }]);
    const [first] = imageUrls(await generate(running, body(11)));
    const [again] = imageUrls(await generate(running, body(11)));
    const [otherSeed] = imageUrls(await generate(running, body(12)));
    const [otherPrompt] = imageUrls(await generate(running, body(11, 'a loud market')));
    assert.notEqual(first, again, 'each image gets its own URL');
    const [a, b, c, d] = await Promise.all(
      [first, again, otherSeed, otherPrompt].map((url) => fetchPng(String(url))),
    );
    assert.ok(a && b && c && d);
    assert.ok(a.bytes.equals(b.bytes));
    assert.ok(meanDifference(a.pixels, c.pixels, a.width) > 10);
    assert.ok(meanDifference(a.pixels, d.pixels, a.width) > 10);
  });

  it('model A image-to-image with one URL image: the output keeps its aspect ratio and resembles it', async () => {
    const reply = await generate(
      running,
      modelABody({ size: '1K', seed: 3 }, [
        { image: server.url('landscape.jpg') },
        { text: 'autumn' },
      ]),
    );
    const [url] = imageUrls(reply);
    const png = await fetchPng(String(url));
    assert.equal(reply.body.usage.size, `${png.width}*${png.height}`);
    assert.ok(Math.abs(png.width / png.height - 2) < 0.02, `${png.width}*${png.height}`);
    assert.ok(Math.abs(png.width * png.height - 1024 * 1024) / (1024 * 1024) < 0.02);
    const source = await resizedPixels(landscape, png.width, png.height);
    const unrelated = await resizedPixels(portrait, png.width, png.height);
    const toSource = meanDifference(png.pixels, source, png.width);
    assert.ok(toSource > 0, 'changed');
    assert.ok(
      toSource < meanDifference(png.pixels, unrelated, png.width),
      'closer to its input than to another image',
    );
  });

  it('model A image-to-image with nine images (data URLs and a URL): follows the last image', async () => {
    const content = [
      ...Array.from({ length: 8 }, () => ({ image: dataUrl(landscape) })),
      { image: server.url('portrait.jpg') },
      { text: 'combine them' },
    ];
    const reply = await generate(running, modelABody({ size: '1K', seed: 5 }, content));
    const png = await fetchPng(String(imageUrls(reply)[0]));
    assert.ok(Math.abs(png.height / png.width - 2) < 0.02, `${png.width}*${png.height}`);
    assert.equal(reply.body.usage.image_count, 1);
  });

  it('model A interactive editing: outside the box equals the input, inside is changed', async () => {
    const wide = await testImage(1200, 600, 30);
    const reply = await generate(
      running,
      modelABody({ size: '1200*600', seed: 9, bbox_list: [[[300, 150, 600, 450]]] }, [
        { image: dataUrl(wide) },
        { text: 'add a boat' },
      ]),
    );
    const png = await fetchPng(String(imageUrls(reply)[0]));
    assert.deepEqual([png.width, png.height], [1200, 600]);
    const source = await resizedPixels(wide, 1200, 600);
    const inside = (x: number, y: number) => x >= 300 && x < 600 && y >= 150 && y < 450;
    // A margin of 2 pixels keeps resampling at the box edge out of the comparison.
    const farOutside = (x: number, y: number) => x < 298 || x >= 602 || y < 148 || y >= 452;
    assert.ok(meanDifference(png.pixels, source, 1200, farOutside) < 3, 'outside unchanged');
    assert.ok(meanDifference(png.pixels, source, 1200, inside) > 15, 'inside changed');
  });

  it('model A refuses a box that leaves its image, naming it', async () => {
    const reply = await generate(
      running,
      modelABody({ bbox_list: [[[0, 0, 801, 100]]] }, [
        { image: dataUrl(landscape) },
        { text: 'x' },
      ]),
    );
    assert.equal(reply.status, 400);
    assert.equal(reply.body.code, 'InvalidParameter');
    assert.match(
      String(reply.body.message),
      /^parameters\.bbox_list\[0\]\[0\]: must lie inside input image 0 \(800\*400\)/,
    );
  });

  it('model A sequential: between 1 and n related but different images', async () => {
    const reply = await generate(
      running,
      modelABody({ enable_sequential: true, n: 3, size: '768*768', seed: 21 }),
    );
    const urls = imageUrls(reply);
    assert.ok(urls.length >= 1 && urls.length <= 3);
    assert.equal(reply.body.usage.image_count, urls.length);
    const pngs = await Promise.all(urls.map(fetchPng));
    for (let i = 1; i < pngs.length; i++)
      assert.ok(!pngs[i]?.bytes.equals(pngs[0]?.bytes as Buffer));
  });

  it('model A colour palette: only the palette colours, each at its share within 2 points', async () => {
    const palette = [
      { hex: '#1B4965', ratio: '50.00%' },
      { hex: '#CAE9FF', ratio: '30.00%' },
      { hex: '#F4A259', ratio: '20.00%' },
    ];
    const reply = await generate(
      running,
      modelABody({ size: '768*768', seed: 4, color_palette: palette }),
    );
    const png = await fetchPng(String(imageUrls(reply)[0]));
    const counts = new Map<string, number>();
    for (let i = 0; i < png.pixels.length; i += 3) {
      const hex = `#${[png.pixels[i], png.pixels[i + 1], png.pixels[i + 2]]
        .map((v) => (v as number).toString(16).padStart(2, '0'))
        .join('')
        .toUpperCase()}`;
      counts.set(hex, (counts.get(hex) ?? 0) + 1);
    }
    const total = png.width * png.height;
    assert.deepEqual([...counts.keys()].sort(), palette.map((entry) => entry.hex).sort());
    for (const entry of palette) {
      const share = ((counts.get(entry.hex) ?? 0) / total) * 100;
      assert.ok(
        Math.abs(share - Number.parseFloat(entry.ratio)) <= 2,
        `${entry.hex}: ${share.toFixed(2)}%`,
      );
    }
  });

  it('model A watermark: changes only the bottom-right corner', async () => {
    const body = (watermark: boolean) => modelABody({ size: '1K', seed: 8, watermark });
    const [plain, marked] = await Promise.all([
      generate(running, body(false)).then((reply) => fetchPng(String(imageUrls(reply)[0]))),
      generate(running, body(true)).then((reply) => fetchPng(String(imageUrls(reply)[0]))),
    ]);
    let changed = 0;
    for (let i = 0; i < plain.pixels.length; i += 3) {
      if (
        plain.pixels[i] === marked.pixels[i] &&
        plain.pixels[i + 1] === marked.pixels[i + 1] &&
        plain.pixels[i + 2] === marked.pixels[i + 2]
      )
        continue;
      const pixel = i / 3;
      const x = pixel % plain.width;
      const y = Math.floor(pixel / plain.width);
      assert.ok(
        x >= plain.width / 2 && y >= (plain.height * 3) / 4,
        `change at ${x},${y} outside the corner`,
      );
      changed++;
    }
    assert.ok(changed > 1000, `${changed} pixels changed`);
  });

  it('model B text-to-image: model B shape and usage', async () => {
    const reply = await generate(running, modelBBody({ size: '512*512', n: 2, seed: 1 }));
    const urls = imageUrls(reply);
    assert.equal(urls.length, 2);
    assert.deepEqual(Object.keys(reply.body.output.choices[0]?.message.content[0] ?? {}), [
      'image',
    ]);
    assert.equal('finished' in reply.body.output, false);
    assert.deepEqual(reply.body.usage, { image_count: 2, width: 512, height: 512 });
    const pngs = await Promise.all(urls.map(fetchPng));
    for (const png of pngs) assert.deepEqual([png.width, png.height], [512, 512]);
  });

  for (const count of [1, 2, 3]) {
    it(`model B edit of ${count} image(s): derived from the last image`, async () => {
      const content = [
        ...Array.from({ length: count - 1 }, () => ({ image: dataUrl(portrait) })),
        { image: dataUrl(landscape) },
        { text: 'make it night' },
      ];
      const parameters = count === 1 ? { seed: 2 } : { size: '1024*512', seed: 2 };
      const reply = await generate(running, modelBBody(parameters, content));
      const png = await fetchPng(String(imageUrls(reply)[0]));
      assert.deepEqual(reply.body.usage, { image_count: 1, width: png.width, height: png.height });
      if (count === 1) {
        assert.ok(
          Math.abs(png.width / png.height - 2) < 0.02,
          'default size keeps the last image aspect',
        );
        assert.ok(Math.abs(png.width * png.height - 2048 * 2048) / (2048 * 2048) < 0.02);
      } else {
        assert.deepEqual([png.width, png.height], [1024, 512]);
      }
      const source = await resizedPixels(landscape, png.width, png.height);
      const unrelated = await resizedPixels(portrait, png.width, png.height);
      assert.ok(
        meanDifference(png.pixels, source, png.width) <
          meanDifference(png.pixels, unrelated, png.width),
      );
    });
  }

  it('refuses a PNG with alpha as an input, naming the item', async () => {
    const withAlpha = await (
      await import('sharp')
    )
      .default({
        create: {
          width: 300,
          height: 300,
          channels: 4,
          background: { r: 1, g: 2, b: 3, alpha: 0.5 },
        },
      })
      .png()
      .toBuffer();
    const reply = await generate(
      running,
      modelABody(undefined, [{ text: 'x' }, { image: dataUrl(withAlpha, 'image/png') }]),
    );
    assert.equal(reply.status, 400);
    assert.equal(reply.body.code, 'InvalidImage');
    assert.match(String(reply.body.message), /^input\.messages\[0\]\.content\[1\]\.image: /);
  });
});
