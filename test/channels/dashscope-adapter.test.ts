import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AttemptFailure, AttemptResult } from '../../src/channels/attempt-result.js';
import { DashScopeAdapter } from '../../src/channels/dashscope/dashscope-adapter.js';
import { UpstreamHttp } from '../../src/channels/upstream-http.js';
import type { DashScopeChannelConfig } from '../../src/config/channel-config.js';
import type { EngineJob } from '../../src/engine/engine.js';
import {
  FAKE_IMAGE_SIZE,
  type FakeDashScope,
  startFakeDashScope,
} from '../fixtures/fake-dashscope.js';
import { eventually } from '../faults/fault-rig.js';
import { channels, jobFor, MODEL_A, MODEL_B, requestBody } from './channel-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

describe('the DashScope adapter against a protocol-faithful fake', () => {
  let fake: FakeDashScope;
  let http: UpstreamHttp;

  before(async () => {
    fake = await startFakeDashScope();
    http = new UpstreamHttp();
  });
  after(async () => {
    await http.close();
    await fake.close();
  });

  const adapter = (fields: Record<string, unknown> = {}) => {
    const [config] = channels([
      {
        name: 'ds',
        type: 'dashscope',
        base_url: fake.url,
        api_key: fake.apiKey,
        poll_interval_ms: 20,
        poll_max_interval_ms: 40,
        ...fields,
      },
    ]);
    return new DashScopeAdapter(config as DashScopeChannelConfig, http);
  };

  const run = async (
    target: DashScopeAdapter,
    job: EngineJob = jobFor(requestBody(MODEL_A)),
    options: { timeoutMs?: number; caller?: AbortController } = {},
  ): Promise<AttemptResult> => {
    const caller = options.caller ?? new AbortController();
    const timeUp =
      options.timeoutMs === undefined
        ? new AbortController().signal
        : AbortSignal.timeout(options.timeoutMs);
    return outputOf(
      target.attempt({
        job,
        upstreamModel: job.request.model === MODEL_A ? 'wan2.7-image-pro' : 'qwen-image-2.0-pro',
        signal: AbortSignal.any([caller.signal, timeUp]),
        upstreamSignal: timeUp,
        callerGone: () => caller.signal.aborted,
        waitOffTheClock: (wait) => wait(),
      }),
    );
  };

  const failed = (result: AttemptResult): AttemptFailure => {
    assert.ok(!result.ok, 'expected a failure');
    return result.failure;
  };

  it('makes a sync call with the channel key, the upstream model name and the rebuilt body', async () => {
    const before = fake.submissions().length;
    const result = await run(adapter(), jobFor(requestBody(MODEL_A, { n: 2, seed: 9 })));
    assert.ok(result.ok);
    const submission = fake.submissions()[before];
    assert.ok(submission !== undefined);
    assert.equal(submission.path, '/api/v1/services/aigc/multimodal-generation/generation');
    assert.equal(submission.headers.authorization, `Bearer ${fake.apiKey}`);
    assert.equal(submission.headers['x-dashscope-async'], undefined);
    const body = JSON.parse(submission.body.toString('utf8')) as {
      model: string;
      parameters: { n: number; seed: number };
    };
    assert.equal(body.model, 'wan2.7-image-pro');
    assert.deepEqual([body.parameters.n, body.parameters.seed], [2, 9]);
    assert.equal(result.output.images.length, 1);
    assert.match(
      (result.output.images[0] as { url: string }).url,
      /^http:\/\/127\.0\.0\.1:\d+\/results\//,
    );
    assert.deepEqual(
      [result.output.width, result.output.height],
      [FAKE_IMAGE_SIZE.width, FAKE_IMAGE_SIZE.height],
    );
    assert.deepEqual(result.output.tokens, { input: 12, output: 34 });
  });

  it('bills the upstream image_count, not the requested n', async () => {
    fake.script({ kind: 'succeed', images: 3, imageCount: 3 });
    const result = await run(
      adapter(),
      jobFor(requestBody(MODEL_A, { enable_sequential: true, n: 12 })),
    );
    assert.ok(result.ok);
    assert.equal(result.output.imagesReported, 3);
    assert.equal(result.output.images.length, 3);
  });

  it('submits an async task, polls PENDING -> RUNNING -> SUCCEEDED and reads the result', async () => {
    fake.script({ kind: 'task', progression: ['PENDING', 'RUNNING', 'SUCCEEDED'], images: 2 });
    const before = fake.requests.length;
    const result = await run(adapter({ mode: 'async' }), jobFor(requestBody(MODEL_B)));
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.output.images.length, 2);
    const traffic = fake.requests
      .slice(before)
      .filter((request) => !request.path.startsWith('/results/'));
    assert.equal(traffic[0]?.path, '/api/v1/services/aigc/image-generation/generation');
    assert.equal(traffic[0]?.headers['x-dashscope-async'], 'enable');
    assert.equal(
      traffic.filter(
        (request) => request.method === 'GET' && request.path.startsWith('/api/v1/tasks/'),
      ).length,
      3,
    );
  });

  it("passes a FAILED task's refusal to the caller and lets other failed tasks fail over", async () => {
    fake.script({
      kind: 'task',
      progression: ['RUNNING', 'FAILED'],
      failure: {
        code: 'DataInspectionFailed',
        message: 'Output data may contain inappropriate content.',
      },
    });
    const moderated = failed(await run(adapter({ mode: 'async' })));
    assert.equal(moderated.kind, 'rejected');
    assert.equal(moderated.callerError?.code, 'DataInspectionFailed');

    fake.script({
      kind: 'task',
      progression: ['FAILED'],
      failure: { code: 'InternalError.Algo', message: 'algorithm error' },
    });
    const algo = failed(await run(adapter({ mode: 'async' })));
    assert.deepEqual([algo.kind, algo.mayHaveBeenAccepted], ['task-failed', false]);
  });

  it('treats an UNKNOWN task as possibly run: not to be sent again', async () => {
    fake.script({ kind: 'task', progression: ['RUNNING', 'UNKNOWN'] });
    const unknown = failed(await run(adapter({ mode: 'async' })));
    assert.deepEqual(
      [unknown.kind, unknown.mayHaveBeenAccepted, unknown.category],
      ['task-unknown', true, 'upstream-error'],
    );
  });

  it('reads a 200 with code and message as a retryable failure', async () => {
    fake.script({
      kind: 'error',
      status: 200,
      code: 'InternalError',
      message: 'an internal error has occured',
    });
    const failure = failed(await run(adapter()));
    assert.deepEqual([failure.kind, failure.mayHaveBeenAccepted], ['error-body', false]);
    assert.match(failure.detail, /HTTP 200 InternalError: an internal error has occured/);
  });

  it('sorts 400 InvalidParameter, 400 DataInspectionFailed, 401, 429 and 500', async () => {
    fake.script(
      {
        kind: 'error',
        status: 400,
        code: 'InvalidParameter',
        message: 'The size is not match the allowed size.',
      },
      {
        kind: 'error',
        status: 400,
        code: 'DataInspectionFailed',
        message: 'Input data may contain inappropriate content.',
      },
      {
        kind: 'error',
        status: 429,
        code: 'Throttling.RateQuota',
        message: 'Requests rate limit exceeded',
        retryAfter: '12',
      },
      { kind: 'error', status: 500, code: 'InternalError', message: 'internal' },
    );
    const invalid = failed(await run(adapter()));
    assert.deepEqual(
      [invalid.kind, invalid.callerError?.code, invalid.callerError?.message],
      ['rejected', 'InvalidParameter', 'The size is not match the allowed size.'],
    );
    const moderated = failed(await run(adapter()));
    assert.equal(moderated.callerError?.code, 'DataInspectionFailed');
    const throttled = failed(await run(adapter()));
    assert.deepEqual([throttled.kind, throttled.retryAfterMs], ['throttled', 12_000]);
    const server = failed(await run(adapter()));
    assert.deepEqual([server.kind, server.mayHaveBeenAccepted], ['server-error', false]);
    const unauthorized = failed(await run(adapter({ api_key: 'sk-wrong-key' })));
    assert.equal(unauthorized.kind, 'key-rejected');
    assert.ok(!unauthorized.detail.includes('sk-wrong-key'));
  });

  it('never re-sends after a malformed 200, a reset after sending, or a time-out after sending', async () => {
    fake.script({ kind: 'malformed' }, { kind: 'reset' }, { kind: 'hang' });
    const malformed = failed(await run(adapter()));
    assert.deepEqual([malformed.kind, malformed.mayHaveBeenAccepted], ['malformed', true]);
    const reset = failed(await run(adapter()));
    assert.deepEqual([reset.kind, reset.mayHaveBeenAccepted], ['dropped', true]);
    const slow = failed(await run(adapter(), undefined, { timeoutMs: 200 }));
    assert.deepEqual(
      [slow.kind, slow.mayHaveBeenAccepted, slow.category],
      ['timeout', true, 'unavailable'],
    );
  });

  it('reports a refused connection as unreachable: nothing was sent', async () => {
    const closed = await startFakeDashScope();
    const url = closed.url;
    await closed.close();
    const failure = failed(await run(adapter({ base_url: url })));
    assert.deepEqual(
      [failure.kind, failure.mayHaveBeenAccepted, failure.detail],
      ['unreachable', false, 'connection refused'],
    );
  });

  it('cancels the upstream task when the caller goes away', async () => {
    fake.script({ kind: 'task', progression: ['PENDING'] });
    const caller = new AbortController();
    void fake.nextPoll().then(() => caller.abort(new Error('caller disconnected')));
    const failure = failed(await run(adapter({ mode: 'async' }), undefined, { caller }));
    assert.deepEqual([failure.kind, failure.mayHaveBeenAccepted], ['caller-gone', true]);
    assert.equal(fake.cancels().length, 1);
  });

  it('reads a sync answer to its end when the caller leaves meanwhile: what the upstream produced is reported', async () => {
    fake.script({ kind: 'succeed', images: 2, imageCount: 2, delayMs: 300 });
    const caller = new AbortController();
    const submitted = fake.submissions().length;
    const result = run(adapter(), jobFor(requestBody(MODEL_A, { n: 2 })), {
      caller,
      timeoutMs: 20_000,
    });
    await eventually(() => fake.submissions().length > submitted, 5000, 'the upstream is working');
    caller.abort(new Error('caller disconnected'));
    const answered = await result;
    assert.ok(answered.ok, 'the answer was read');
    assert.deepEqual([answered.output.images.length, answered.output.imagesReported], [2, 2]);
  });

  it('follows a task that runs on when the caller leaves, its cancel refused, to its end', async () => {
    const cancelsBefore = fake.cancels().length;
    fake.script({ kind: 'task', progression: ['RUNNING', 'RUNNING', 'SUCCEEDED'], images: 2 });
    const caller = new AbortController();
    void fake.nextPoll().then(() => caller.abort(new Error('caller disconnected')));
    const result = await run(adapter({ mode: 'async' }), jobFor(requestBody(MODEL_A, { n: 2 })), {
      caller,
      timeoutMs: 20_000,
    });
    assert.equal(fake.cancels().length, cancelsBefore + 1, 'a cancel was tried');
    assert.ok(result.ok, 'the task was followed to its end');
    assert.deepEqual([result.output.images.length, result.output.imagesReported], [2, 2]);
  });

  it('cancels the task and reports a time-out when the channel deadline passes while polling', async () => {
    const cancelsBefore = fake.cancels().length;
    fake.script({ kind: 'task', progression: ['PENDING'] });
    const failure = failed(await run(adapter({ mode: 'async' }), undefined, { timeoutMs: 200 }));
    assert.deepEqual([failure.kind, failure.mayHaveBeenAccepted], ['timeout', true]);
    assert.match(failure.detail, /timed out while task .* ran/);
    assert.equal(fake.cancels().length, cancelsBefore + 1);
  });

  it('refuses the async path without X-DashScope-Async as the real service does', async () => {
    // The fake's 403 for a missing header stands for a channel misconfiguration: the key is fine,
    // but the channel cannot serve, so it is taken out like a rejected key.
    const response = await fetch(`${fake.url}/api/v1/services/aigc/image-generation/generation`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'wan2.7-image-pro', input: { messages: [] } }),
    });
    assert.equal(response.status, 403);
    assert.equal(((await response.json()) as { code: string }).code, 'AccessDenied');
  });
});
