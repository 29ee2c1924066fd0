import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { ApiKey } from '../../src/domain/api-key.js';
import { encodeMultipart, newBoundary } from '../../src/channels/openai/multipart.js';
import {
  classifyOpenAiError,
  closestSize,
  editsParts,
  generationsBody,
  readOpenAiOutput,
} from '../../src/channels/openai/openai-protocol.js';
import { pngSize } from '../../src/channels/png-size.js';
import { jobFor, loadedPng, MODEL_A, MODEL_B, requestBody } from './channel-fixtures.js';

const GPT_IMAGE = [
  { width: 1024, height: 1024 },
  { width: 1536, height: 1024 },
  { width: 1024, height: 1536 },
];

describe('mapping sizes to the closest the upstream accepts', () => {
  it('prefers the nearest aspect ratio, then the nearest pixel count', () => {
    const cases: [number, number, string][] = [
      [2048, 2048, '1024x1024'],
      [4096, 4096, '1024x1024'],
      [1024, 768, '1536x1024'],
      [768, 1344, '1024x1536'],
      [4000, 500, '1536x1024'],
      [600, 600, '1024x1024'],
    ];
    for (const [width, height, expected] of cases) {
      const size = closestSize({ width, height }, GPT_IMAGE);
      assert.equal(`${size.width}x${size.height}`, expected, `${width}x${height}`);
    }
    const dalle2 = [
      { width: 256, height: 256 },
      { width: 512, height: 512 },
      { width: 1024, height: 1024 },
    ];
    assert.deepEqual(closestSize({ width: 600, height: 600 }, dalle2), { width: 512, height: 512 });
  });
});

describe('OpenAI request bodies', () => {
  it('asks generations for b64_json at the mapped size, without parameters OpenAI lacks', () => {
    const job = jobFor(requestBody(MODEL_B, { n: 2, negative_prompt: 'rain', seed: 5 }));
    assert.deepEqual(
      generationsBody(job, {
        upstreamModel: 'gpt-image-1',
        size: { width: 1024, height: 1024 },
        sendResponseFormat: true,
      }),
      {
        model: 'gpt-image-1',
        prompt: 'a lighthouse at dusk',
        n: 2,
        size: '1024x1024',
        response_format: 'b64_json',
      },
    );
    assert.equal(
      'response_format' in
        generationsBody(job, {
          upstreamModel: 'g',
          size: { width: 1024, height: 1024 },
          sendResponseFormat: false,
        }),
      false,
    );
  });

  it('sends edits as multipart with each input image as a file, image[] for several', async () => {
    const first = await loadedPng(300, 300, 'a');
    const second = await loadedPng(320, 240, 'b');
    const job = jobFor(requestBody(MODEL_A, {}, ['https://x/a.png', 'https://x/b.png']), {
      inputs: [first, second],
    });
    const boundary = newBoundary();
    const bytes = encodeMultipart(
      editsParts(job, {
        upstreamModel: 'gpt-image-1',
        size: { width: 1024, height: 1024 },
        sendResponseFormat: true,
      }),
      boundary,
    );
    const form = await new Response(bytes, {
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    }).formData();
    assert.equal(form.get('model'), 'gpt-image-1');
    assert.equal(form.get('prompt'), 'a lighthouse at dusk');
    assert.equal(form.get('size'), '1024x1024');
    assert.equal(form.get('response_format'), 'b64_json');
    const files = form.getAll('image[]') as File[];
    assert.equal(files.length, 2);
    assert.equal(files[0]?.type, 'image/png');
    assert.deepEqual(Buffer.from(await (files[1] as File).arrayBuffer()), second.bytes());

    const single = jobFor(requestBody(MODEL_B, {}, ['https://x/a.png']), { inputs: [first] });
    const singleBoundary = newBoundary();
    const singleForm = await new Response(
      encodeMultipart(
        editsParts(single, {
          upstreamModel: 'm',
          size: { width: 1024, height: 1024 },
          sendResponseFormat: false,
        }),
        singleBoundary,
      ),
      { headers: { 'content-type': `multipart/form-data; boundary=${singleBoundary}` } },
    ).formData();
    assert.equal((singleForm.getAll('image') as File[]).length, 1);
    assert.equal(singleForm.get('response_format'), null);
  });
});

describe('reading OpenAI answers', () => {
  it('decodes b64_json PNGs and takes the size from the PNG itself', async () => {
    const png = await sharp({
      create: { width: 1536, height: 1024, channels: 3, background: '#123456' },
    })
      .png()
      .toBuffer();
    const read = readOpenAiOutput(
      {
        created: 1,
        data: [{ b64_json: png.toString('base64') }, { b64_json: png.toString('base64') }],
        usage: { input_tokens: 3, output_tokens: 4 },
      },
      { width: 1024, height: 1024 },
    );
    assert.ok(read.ok);
    assert.equal(read.output.images.length, 2);
    assert.deepEqual(
      [read.output.width, read.output.height, read.output.imagesReported],
      [1536, 1024, undefined],
    );
    assert.deepEqual(read.output.tokens, { input: 3, output: 4 });
    const first = read.output.images[0];
    assert.ok(first?.kind === 'png');
    assert.deepEqual(pngSize(first.bytes), { width: 1536, height: 1024 });
  });

  it('keeps url items as upstream images and refuses answers without images or with non-PNG data', () => {
    const urls = readOpenAiOutput(
      { data: [{ url: 'https://cdn/x.png' }] },
      { width: 1024, height: 1024 },
    );
    assert.ok(urls.ok);
    assert.deepEqual(urls.output.images, [{ kind: 'upstream', url: 'https://cdn/x.png' }]);
    assert.deepEqual(readOpenAiOutput({ data: [] }, { width: 1, height: 1 }), {
      ok: false,
      problem: 'answer holds no images',
    });
    assert.deepEqual(
      readOpenAiOutput({ data: [{ b64_json: 'aGVsbG8=' }] }, { width: 1, height: 1 }),
      {
        ok: false,
        problem: 'answer holds an image that is not a PNG',
      },
    );
  });
});

describe('classifying OpenAI errors', () => {
  const key = new ApiKey('sk-openai-real-key-abcdef');
  const classify = (status: number, error: Record<string, unknown>) => {
    const result = classifyOpenAiError(status, { error }, '', key);
    assert.ok(!result.ok);
    return result.failure;
  };

  it('sorts refusals, moderation, keys, throttling and server errors', () => {
    const invalid = classify(400, {
      message: 'Invalid size',
      type: 'invalid_request_error',
      code: null,
      param: 'size',
    });
    assert.deepEqual(
      [invalid.kind, invalid.callerError?.code, invalid.callerError?.message],
      ['rejected', 'InvalidParameter', 'Invalid size'],
    );
    const moderated = classify(400, {
      message: 'Your request was rejected by the safety system.',
      type: 'image_generation_user_error',
      code: 'moderation_blocked',
    });
    assert.equal(moderated.callerError?.code, 'DataInspectionFailed');
    assert.equal(
      classify(400, { message: "Unknown parameter: 'response_format'.", param: 'response_format' })
        .kind,
      'error-body',
    );
    assert.equal(
      classify(404, { message: 'The model does not exist', code: 'model_not_found' }).kind,
      'error-body',
    );
    assert.equal(
      classify(429, { message: 'Rate limit', code: 'rate_limit_exceeded' }).kind,
      'throttled',
    );
    assert.equal(classify(500, { message: 'oops' }).kind, 'server-error');
    assert.equal(classify(503, { message: 'overloaded' }).category, 'unavailable');
  });

  it('scrubs the masked key OpenAI echoes in 401 messages', () => {
    const failure = classify(401, {
      message:
        'Incorrect API key provided: sk-ope***cdef. You can find your API key at https://platform.openai.com.',
      code: 'invalid_api_key',
    });
    assert.equal(failure.kind, 'key-rejected');
    assert.ok(!failure.detail.includes('sk-ope'), failure.detail);
  });
});
