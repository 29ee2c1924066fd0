import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { dashScopeChannelEnv } from '../faults/fault-rig.js';
import { FAKE_IMAGE_SIZE, startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { fetchPng, testImage } from './e2e-helpers.js';

/**
 * The official OpenAI Node SDK, pointed at a whole gateway over a socket, is the oracle of the
 * wire format: what it sends is what the routes must take, and what it reads must be there.
 */
describe('the OpenAI Node SDK against the gateway', () => {
  let gateway: TestGateway;
  let baseUrl: string;
  let client: OpenAI;

  before(async () => {
    gateway = await startTestGateway();
    baseUrl = `${await gateway.listen()}/v1`;
    client = new OpenAI({
      apiKey: (await gateway.bearer()).slice('Bearer '.length),
      baseURL: baseUrl,
      maxRetries: 0,
    });
  });
  after(() => gateway.close());

  it('generates with model A as URLs, n = 2, at the size asked', async () => {
    const answer = await client.images.generate({
      model: MODEL_A,
      prompt: 'a red fox in the snow',
      n: 2,
      size: '1024x1024',
    });
    assert.equal(answer.data?.length, 2);
    assert.equal(answer.size, '1024x1024');
    assert.ok(Math.abs(answer.created - Date.now() / 1000) < 60);
    const usage = answer.usage as unknown as Record<string, number>;
    assert.equal(usage.image_count, 2);
    assert.equal(usage.total_tokens, (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0));
    for (const image of answer.data ?? []) {
      assert.ok(image.url !== undefined);
      const png = await fetchPng(image.url);
      assert.deepEqual([png.width, png.height], [1024, 1024]);
    }
  });

  it('generates with model B as b64_json, n = 2: each is the whole PNG, streamed from storage', async () => {
    const answer = await client.images.generate({
      model: MODEL_B,
      prompt: 'a lighthouse at dusk',
      n: 2,
      size: '768x512',
      response_format: 'b64_json',
    });
    assert.equal(answer.data?.length, 2);
    const usage = answer.usage as unknown as Record<string, number>;
    assert.deepEqual(usage, { image_count: 2, width: 768, height: 512 });
    for (const image of answer.data ?? []) {
      assert.equal(image.url, undefined);
      const bytes = Buffer.from(image.b64_json ?? '', 'base64');
      assert.equal(bytes.toString('base64'), image.b64_json, 'canonical base64');
      const metadata = await sharp(bytes).metadata();
      assert.deepEqual([metadata.format, metadata.width, metadata.height], ['png', 768, 512]);
    }
  });

  it("takes DALL-E 3's style and quality with the values that change nothing", async () => {
    for (const style of ['vivid', 'natural'] as const) {
      const answer = await client.images.generate({
        model: MODEL_B,
        prompt: 'a lighthouse',
        size: '768x512',
        style,
        quality: 'standard',
      });
      assert.ok(answer.data?.[0]?.url !== undefined, 'generations still answer URLs by default');
    }
  });

  it('takes model A presets and auto as sizes', async () => {
    const preset = await client.images.generate({ model: MODEL_A, prompt: 'a fox', size: '1K' });
    assert.equal(preset.size, '1024x1024');
    const auto = await client.images.generate({ model: MODEL_B, prompt: 'a fox', size: 'auto' });
    assert.equal(auto.size, '2048x2048');
  });

  it('edits several files sent as image[] with a bbox_list extra, and one file as image', async () => {
    const first = await testImage(480, 320, 0, 'png');
    const second = await testImage(320, 480, 40);
    const several = await client.images.edit({
      model: MODEL_A,
      prompt: 'make it autumn',
      image: [
        await toFile(first, 'first.png', { type: 'image/png' }),
        await toFile(second, 'second.jpg', { type: 'image/jpeg' }),
      ],
      size: '1K',
      // What the SDK's extra body fields become in a form: text; structures go as JSON text.
      ...{ bbox_list: JSON.stringify([[[0, 0, 100, 100]], []]), seed: 7, watermark: true },
    });
    assert.equal(several.data?.length, 1);
    // Without response_format an edit answers base64, as OpenAI's GPT image models do.
    assert.equal(several.data?.[0]?.url, undefined);
    assert.equal(
      (await sharp(Buffer.from(several.data?.[0]?.b64_json ?? '', 'base64')).metadata()).format,
      'png',
    );
    // A preset with inputs keeps the last input image's aspect ratio (docs/api.md §5.5).
    const [width, height] = (several.size ?? '').split('x').map(Number);
    assert.ok(width !== undefined && height !== undefined && height > width);

    const one = await client.images.edit({
      model: MODEL_B,
      prompt: 'make it winter',
      image: await toFile(first, 'only.png', { type: 'image/png' }),
      n: 2,
      response_format: 'b64_json',
    });
    assert.equal(one.data?.length, 2);
    assert.equal(one.size, '2512x1672');
  });

  it('lists the models and their aliases and gets one; an unknown one is NotFoundError', async () => {
    const listed = await client.models.list();
    assert.deepEqual(
      listed.data.map((model) => model.id),
      [MODEL_A, 'wan2.7-image-pro', MODEL_B, 'qwen-image-2.0-pro'],
    );
    const alias = await client.models.retrieve('qwen-image-2.0-pro');
    assert.equal(alias.id, 'qwen-image-2.0-pro');
    const model = await client.models.retrieve(MODEL_B);
    assert.deepEqual(
      { id: model.id, object: model.object, owned_by: model.owned_by },
      { id: MODEL_B, object: 'model', owned_by: 'imagegate' },
    );
    await assert.rejects(client.models.retrieve('dall-e-3'), (error: unknown) => {
      assert.ok(error instanceof OpenAI.NotFoundError);
      assert.match(error.message, /^404 model "dall-e-3" does not exist/);
      return true;
    });
  });

  it('lists only the models a token may use, and refuses the others at generation', async () => {
    const { token, record } = await gateway.services.tokenIssuer.issue({
      name: 'model-b-only',
      account: 'acme',
      admin: false,
      expiresInSeconds: undefined,
    });
    await gateway.admission.limits.update(record.id, { allowedModels: [MODEL_B] });
    const limited = new OpenAI({ apiKey: token, baseURL: baseUrl, maxRetries: 0 });
    const listed = await limited.models.list();
    assert.deepEqual(
      listed.data.map((model) => model.id),
      [MODEL_B, 'qwen-image-2.0-pro'],
    );
    await assert.rejects(limited.models.retrieve(MODEL_A), OpenAI.NotFoundError);
    await assert.rejects(limited.models.retrieve('wan2.7-image-pro'), OpenAI.NotFoundError);
    await assert.rejects(
      limited.images.generate({ model: MODEL_A, prompt: 'a fox' }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.AuthenticationError);
        assert.equal(error.code, 'InvalidApiKey');
        return true;
      },
    );
  });

  it("takes the OpenAI options that have a meaning here, and the models' own fields as extras", async () => {
    const answer = await client.images.generate({
      model: MODEL_B,
      prompt: 'a fox',
      quality: 'standard',
      background: 'opaque',
      output_format: 'png',
      moderation: 'auto',
      user: 'end-user-7',
      size: '1024x1024',
      // What the SDKs send for extra_body: top-level fields, validated by the model's rules.
      ...{ seed: 7, negative_prompt: 'people', watermark: false, prompt_extend: false },
    } as OpenAI.ImageGenerateParamsNonStreaming);
    assert.equal(answer.data?.length, 1);
    const again = await client.images.generate({
      model: MODEL_B,
      prompt: 'a fox',
      size: '1024x1024',
      ...{ seed: 7, negative_prompt: 'people', watermark: false, prompt_extend: false },
    } as OpenAI.ImageGenerateParamsNonStreaming);
    const [first, second] = await Promise.all(
      [answer, again].map(async (each) =>
        Buffer.from(await (await fetch(each.data?.[0]?.url ?? '')).arrayBuffer()),
      ),
    );
    assert.ok(first !== undefined && second !== undefined && first.equals(second), 'same seed');
    await assert.rejects(
      client.images.generate({
        model: MODEL_B,
        prompt: 'a fox',
        ...{ prompt_extend: 'yes' },
      } as OpenAI.ImageGenerateParamsNonStreaming),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError);
        assert.equal(error.param, 'prompt_extend');
        return true;
      },
    );
  });

  it('answers under the route prefix too, and /openapi.json describes the OpenAI routes', async () => {
    const prefixed = new OpenAI({
      apiKey: client.apiKey,
      baseURL: baseUrl.replace(/\/v1$/, '/vendor/v1'),
      maxRetries: 0,
    });
    const answer = await prefixed.images.generate({ model: MODEL_B, prompt: 'a fox', n: 1 });
    assert.equal(answer.data?.length, 1);
    const openapi = (await gateway.app.inject({ url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    for (const [path, method] of [
      ['/vendor/v1/images/generations', 'post'],
      ['/vendor/v1/images/edits', 'post'],
      ['/vendor/v1/models', 'get'],
      ['/vendor/v1/models/{id}', 'get'],
    ] as const)
      assert.ok(openapi.paths[path]?.[method] !== undefined, `${method} ${path}`);
  });

  it('raises BadRequestError with our message, the OpenAI field as param and our code', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ model: MODEL_B, size: '1K' }, 'size', /^size: must be WIDTHxHEIGHT, got "1K"/],
      [{ model: MODEL_B, size: '100x100' }, 'size', /100x100/],
      [{ model: MODEL_A, n: 9 }, 'n', /^n: must be between 1 and 4 in normal mode/],
      [{ model: MODEL_B, thinking_mode: true }, 'thinking_mode', /is not a field of model/],
      [{ model: MODEL_A, quality: 'hd' }, 'quality', /^quality: must be "auto" or "standard"/],
      [{ model: MODEL_A, style: 'dramatic' }, 'style', /^style: must be "vivid" or "natural"/],
      [{ model: MODEL_A, background: 'transparent' }, 'background', /opaque/],
      [{ model: MODEL_A, output_format: 'webp' }, 'output_format', /PNG/],
      [{ model: MODEL_A, moderation: 'low' }, 'moderation', /moderation/],
      [{ model: MODEL_A, response_format: 'png' }, 'response_format', /"url" or "b64_json"/],
      [{ model: MODEL_A, bbox_list: [[[0, 0, 1, 1]]] }, 'bbox_list', /requires input images/],
      [{ model: MODEL_A, temperature: 1 }, 'temperature', /not a field of \/v1\/images/],
      [{ model: 'dall-e-3' }, 'model', /^model: must be one of/],
      [{ prompt: '   ', model: MODEL_A }, 'prompt', /^prompt: must not be empty/],
    ];
    for (const [fields, param, message] of cases) {
      const body = {
        prompt: 'a fox',
        ...fields,
      } as unknown as OpenAI.ImageGenerateParamsNonStreaming;
      await assert.rejects(client.images.generate(body), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, JSON.stringify(fields));
        assert.equal(error.param, param, JSON.stringify(fields));
        assert.equal(error.code, 'InvalidParameter');
        assert.equal(error.type, 'invalid_request_error');
        assert.match(error.message.replace(/^400 /, ''), message);
        assert.ok(error.requestID !== undefined && error.requestID !== null);
        return true;
      });
    }
  });

  it('refuses a mask with a message pointing at bbox_list, and a bad file naming it', async () => {
    const png = await testImage(320, 320, 0, 'png');
    await assert.rejects(
      client.images.edit({
        model: MODEL_A,
        prompt: 'x',
        image: await toFile(png, 'a.png'),
        mask: await toFile(png, 'mask.png'),
      }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError);
        assert.equal(error.param, 'mask');
        assert.match(error.message, /bbox_list/);
        return true;
      },
    );
    await assert.rejects(
      client.images.edit({
        model: MODEL_B,
        prompt: 'x',
        image: [await toFile(png, 'a.png'), await toFile(Buffer.from('not an image'), 'b.png')],
      }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError);
        assert.equal(error.code, 'InvalidImage');
        assert.equal(error.param, 'image[1]');
        return true;
      },
    );
  });

  it('raises AuthenticationError for a bad key and NotFoundError for another /v1 route', async () => {
    const stranger = new OpenAI({ apiKey: 'not-a-token', baseURL: baseUrl, maxRetries: 0 });
    await assert.rejects(
      stranger.images.generate({ model: MODEL_A, prompt: 'x' }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.AuthenticationError);
        assert.equal(error.code, 'InvalidApiKey');
        assert.equal(error.type, 'authentication_error');
        return true;
      },
    );
    await assert.rejects(
      client.chat.completions.create({
        model: MODEL_A,
        messages: [{ role: 'user', content: 'x' }],
      }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.NotFoundError);
        assert.match(error.message, /^404 no route for POST \/v1\/chat\/completions/);
        return true;
      },
    );
  });
});

describe('the OpenAI Node SDK against a pass_through_urls channel', () => {
  it('gets b64_json all the same: the upstream images are stored, then streamed from storage', async (t) => {
    const fake = await startFakeDashScope();
    t.after(() => fake.close());
    const gateway = await startTestGateway({
      env: await dashScopeChannelEnv(t, fake, { passThroughUrls: true }),
    });
    t.after(() => gateway.close());
    const client = new OpenAI({
      apiKey: (await gateway.bearer()).slice('Bearer '.length),
      baseURL: `${await gateway.listen()}/v1`,
      maxRetries: 0,
    });

    const asUrls = await client.images.generate({ model: MODEL_A, prompt: 'a fox', n: 1 });
    assert.ok(asUrls.data?.[0]?.url?.startsWith(fake.url), 'a URL passes through untouched');

    const inline = await client.images.generate({
      model: MODEL_A,
      prompt: 'a fox',
      n: 1,
      response_format: 'b64_json',
    });
    const bytes = Buffer.from(inline.data?.[0]?.b64_json ?? '', 'base64');
    const metadata = await sharp(bytes).metadata();
    assert.deepEqual(
      [metadata.format, metadata.width, metadata.height],
      ['png', FAKE_IMAGE_SIZE.width, FAKE_IMAGE_SIZE.height],
    );
  });
});
