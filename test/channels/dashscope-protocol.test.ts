import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiKey } from '../../src/domain/api-key.js';
import {
  classifyDashScopeError,
  dashScopeBody,
  dashScopeBodyBytes,
  errorOf,
  ratioText,
  readDashScopeOutput,
  readTaskId,
  readTaskState,
} from '../../src/channels/dashscope/dashscope-protocol.js';
import { jobFor, loadedPng, MODEL_A, MODEL_B, requestBody } from './channel-fixtures.js';

const KEY = new ApiKey('sk-dashscope-secret');
const TINY_PNG_URL = 'https://images.example/cat.png';

describe('the DashScope request body', () => {
  it('is rebuilt from the validated model A request: truncated prompt, explicit defaults, decided seed', () => {
    const long = 'x'.repeat(5003);
    const job = jobFor(requestBody(MODEL_A, {}, [], long), { seed: 77 });
    const body = dashScopeBody(job, 'wan2.7-image-pro');
    assert.equal(body.model, 'wan2.7-image-pro');
    assert.deepEqual(body.input.messages[0].content, [{ text: 'x'.repeat(5000) }]);
    assert.deepEqual(body.parameters, {
      size: '2K',
      n: 1,
      enable_sequential: false,
      thinking_mode: true,
      watermark: false,
      seed: 77,
    });
  });

  it('forwards palette, boxes, custom sizes and images: URLs as URLs, data with the sniffed MIME type', async () => {
    const input = await loadedPng(400, 300, 'input.messages[0].content[1].image');
    const dataUrl = `data:image/jpeg;base64,${input.bytes().toString('base64')}`;
    const job = jobFor(
      requestBody(
        MODEL_A,
        {
          size: '1024*768',
          n: 2,
          watermark: true,
          thinking_mode: true,
          bbox_list: [[], [[10, 20, 100, 120]]],
          color_palette: [
            { hex: '#ff0000', ratio: '12.50%' },
            { hex: '#00FF00', ratio: '37.50%' },
            { hex: '#0000ff', ratio: '50.00%' },
          ],
        },
        [TINY_PNG_URL, dataUrl],
      ),
      { inputs: [await loadedPng(400, 300, 'input.messages[0].content[0].image'), input] },
    );
    const body = dashScopeBody(job, 'm');
    assert.deepEqual(body.input.messages[0].content, [
      { image: TINY_PNG_URL },
      { image: `data:image/png;base64,${input.bytes().toString('base64')}` },
      { text: 'a lighthouse at dusk' },
    ]);
    assert.deepEqual(body.parameters, {
      size: '1024*768',
      n: 2,
      enable_sequential: false,
      color_palette: [
        { hex: '#FF0000', ratio: '12.50%' },
        { hex: '#00FF00', ratio: '37.50%' },
        { hex: '#0000FF', ratio: '50.00%' },
      ],
      bbox_list: [[], [[10, 20, 100, 120]]],
      watermark: true,
      seed: 4242,
    });
  });

  it('sends an uploaded (oss://) image as a data URL of its bytes, which the upstream can read', async () => {
    const input = await loadedPng(400, 300, 'input.messages[0].content[0].image');
    const job = jobFor(requestBody(MODEL_B, { n: 1 }, ['oss://uploads/1.ab.cd/cat.png']), {
      inputs: [input],
    });
    assert.deepEqual(dashScopeBody(job, 'm').input.messages[0].content[0], {
      image: `data:image/png;base64,${input.bytes().toString('base64')}`,
    });
  });

  it('is sent as the exact bytes of its JSON, data URLs of loaded and unloaded images alike', async () => {
    const loaded = await loadedPng(400, 300, 'input.messages[0].content[1].image');
    const base64 = loaded.bytes().toString('base64');
    const images = [
      TINY_PNG_URL,
      `data:image/jpeg;base64,${base64}`,
      `data:image/png;base64,${base64}`,
    ];
    const prompt = 'a "quoted" lighthouse \\ at dusk, ünïcödé 😀';
    for (const inputs of [[], [await loadedPng(400, 300, 'first'), loaded, loaded]]) {
      const job = jobFor(requestBody(MODEL_A, { n: 2 }, images, prompt), { inputs });
      const streamed = dashScopeBodyBytes(job, 'wan2.7-image-pro');
      const expected = Buffer.from(JSON.stringify(dashScopeBody(job, 'wan2.7-image-pro')));
      // Without checked inputs there is nothing to stream: the body is one Buffer.
      assert.equal(Buffer.isBuffer(streamed), inputs.length === 0);
      const bytes = Buffer.isBuffer(streamed) ? streamed : Buffer.concat([...streamed.chunks()]);
      assert.deepEqual(bytes, expected);
      assert.equal(
        Buffer.isBuffer(streamed) ? streamed.length : streamed.byteLength,
        expected.length,
      );
    }
  });

  it('sends model B its size as decided (the default included), negative prompt and prompt_extend', () => {
    const job = jobFor(
      requestBody(MODEL_B, { n: 3, negative_prompt: 'blurry', prompt_extend: false }),
    );
    assert.deepEqual(dashScopeBody(job, 'qwen-image-2.0-pro').parameters, {
      n: 3,
      negative_prompt: 'blurry',
      prompt_extend: false,
      watermark: false,
      size: '2048*2048',
      seed: 4242,
    });
  });

  it('writes palette ratios with two decimals', () => {
    assert.equal(ratioText(1250), '12.50%');
    assert.equal(ratioText(5), '0.05%');
    assert.equal(ratioText(10000), '100.00%');
  });
});

describe('reading DashScope answers', () => {
  const job = jobFor(requestBody(MODEL_A));

  it('reads images, the billed image_count, size and tokens of a model A answer', () => {
    const read = readDashScopeOutput(
      {
        output: {
          choices: [
            {
              finish_reason: 'stop',
              message: {
                role: 'assistant',
                content: [
                  { type: 'image', image: 'https://oss/a.png' },
                  { type: 'image', image: 'https://oss/b.png' },
                ],
              },
            },
          ],
          finished: true,
        },
        usage: {
          image_count: 2,
          size: '1536*1024',
          input_tokens: 10,
          output_tokens: 20,
          total_tokens: 30,
        },
        request_id: 'r',
      },
      job,
    );
    assert.deepEqual(read, {
      ok: true,
      output: {
        images: [
          { kind: 'upstream', url: 'https://oss/a.png' },
          { kind: 'upstream', url: 'https://oss/b.png' },
        ],
        width: 1536,
        height: 1024,
        imagesReported: 2,
        tokens: { input: 10, output: 20 },
      },
    });
  });

  it('reads model B usage and the older results[].url form, falling back to the images returned', () => {
    const modelB = readDashScopeOutput(
      {
        output: { choices: [{ message: { content: [{ image: 'u1' }] } }] },
        usage: { image_count: 1, width: 1328, height: 1328 },
      },
      job,
    );
    assert.ok(modelB.ok);
    assert.deepEqual(
      [modelB.output.width, modelB.output.height, modelB.output.imagesReported],
      [1328, 1328, 1],
    );
    const results = readDashScopeOutput(
      { output: { results: [{ url: 'u1' }, { url: 'u2' }] } },
      job,
    );
    assert.ok(results.ok);
    assert.equal(results.output.imagesReported, undefined, 'no usage: nothing reported');
    assert.deepEqual(
      [results.output.width, results.output.height],
      [2048, 2048],
      'the decided size',
    );
    assert.deepEqual(readDashScopeOutput({ output: { choices: [] } }, job), {
      ok: false,
      problem: 'answer holds no images',
    });
  });

  it('finds error codes at the top level and in task output', () => {
    assert.deepEqual(errorOf({ code: 'InternalError', message: 'boom', request_id: 'r' }), {
      code: 'InternalError',
      message: 'boom',
    });
    assert.deepEqual(errorOf({ output: { task_status: 'FAILED', code: 'X', message: 'y' } }), {
      code: 'X',
      message: 'y',
    });
    assert.equal(errorOf({ output: { choices: [] } }), undefined);
    assert.equal(errorOf({ code: '', message: '' }), undefined);
  });

  it('reads task ids and states', () => {
    assert.equal(readTaskId({ output: { task_id: 't-1', task_status: 'PENDING' } }), 't-1');
    assert.equal(readTaskId({ output: {} }), undefined);
    for (const status of ['PENDING', 'RUNNING', 'SUSPENDED'])
      assert.deepEqual(readTaskState({ output: { task_status: status } }), { state: 'running' });
    assert.equal(readTaskState({ output: { task_status: 'SUCCEEDED' } })?.state, 'succeeded');
    assert.deepEqual(
      readTaskState({ output: { task_status: 'FAILED', code: 'C', message: 'm' } }),
      {
        state: 'failed',
        error: { code: 'C', message: 'm' },
      },
    );
    assert.equal(readTaskState({ output: { task_status: 'CANCELED' } })?.state, 'canceled');
    assert.equal(readTaskState({ output: { task_status: 'UNKNOWN' } })?.state, 'unknown');
    assert.equal(readTaskState({ output: { task_status: 'WHATEVER' } }), undefined);
  });
});

describe('classifying DashScope errors', () => {
  const classify = (status: number, code: string, message = 'text', retryAfter?: number) => {
    const result = classifyDashScopeError(status, { code, message }, KEY, retryAfter);
    assert.ok(!result.ok);
    return result.failure;
  };

  it('passes request refusals to the caller as 400s with the upstream message', () => {
    const invalid = classify(400, 'InvalidParameter', 'size is out of range');
    assert.equal(invalid.kind, 'rejected');
    assert.equal(invalid.callerError?.code, 'InvalidParameter');
    assert.equal(invalid.callerError?.message, 'size is out of range');
    const moderated = classify(
      400,
      'DataInspectionFailed',
      'Input data may contain inappropriate content.',
    );
    assert.equal(moderated.callerError?.code, 'DataInspectionFailed');
    assert.equal(moderated.callerError?.status, 400);
    assert.equal(classify(200, 'DataInspectionFailed').callerError?.code, 'DataInspectionFailed');
    assert.equal(classify(400, 'data_inspection_failed').callerError?.code, 'DataInspectionFailed');
    const other = classify(400, 'BadRequest.TooLarge', 'too large');
    assert.equal(other.callerError?.code, 'InvalidParameter');
    assert.equal(other.callerError?.message, 'BadRequest.TooLarge: too large');
  });

  it("treats an unknown upstream model as the channel's problem, not the caller's", () => {
    const failure = classify(400, 'InvalidParameter', 'Model not exist.');
    assert.equal(failure.kind, 'error-body');
    assert.equal(failure.callerError, undefined);
  });

  it('sorts key, throttling, server and error-body failures', () => {
    assert.equal(classify(401, 'InvalidApiKey').kind, 'key-rejected');
    assert.equal(classify(403, 'AccessDenied').kind, 'key-rejected');
    assert.equal(classify(400, 'Arrearage').kind, 'key-rejected');
    const throttled = classify(429, 'Throttling.RateQuota', 'slow down', 7000);
    assert.deepEqual(
      [throttled.kind, throttled.category, throttled.retryAfterMs],
      ['throttled', 'unavailable', 7000],
    );
    assert.deepEqual(
      [classify(500, 'InternalError').kind, classify(500, 'InternalError').category],
      ['server-error', 'upstream-error'],
    );
    assert.equal(classify(503, 'ServiceUnavailable').category, 'unavailable');
    const errorBody = classify(200, 'InternalError.Algo', 'algo failed');
    assert.deepEqual(
      [errorBody.kind, errorBody.category, errorBody.mayHaveBeenAccepted],
      ['error-body', 'upstream-error', false],
    );
  });

  it('never lets the key into a detail', () => {
    const failure = classify(401, 'InvalidApiKey', 'key sk-dashscope-secret is wrong');
    assert.ok(!failure.detail.includes('sk-dashscope-secret'), failure.detail);
  });
});
