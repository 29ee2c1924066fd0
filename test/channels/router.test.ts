import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import { after, before, beforeEach, describe, it } from 'node:test';
import Fastify from 'fastify';
import type { ReloadableRouter } from '../../src/channels/reloadable-router.js';
import { ChannelFailure } from '../../src/channels/channel-failure.js';
import type { ChannelConfig } from '../../src/config/channel-config.js';
import type { Engine, EngineJob, EngineOutput, PngImage } from '../../src/engine/engine.js';
import { FailedAfterProduction } from '../../src/engine/engine.js';
import { CallerGone } from '../../src/errors/caller-gone.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { registerImageRoutes } from '../../src/http/routes/image-routes.js';
import { type FakeDashScope, startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fixtures/fake-openai.js';
import { eventually } from '../faults/fault-rig.js';
import {
  channels,
  jobFor,
  loadedPng,
  MODEL_A,
  MODEL_B,
  requestBody,
  routerFor,
  seededRandom,
  temporaryStorage,
} from './channel-fixtures.js';
import { answersAtOnce, outputOf } from '../../src/engine/engine-run.js';

type Storage = Awaited<ReturnType<typeof temporaryStorage>>;

/** The error a generation fails with; one after the upstream produced carries what it produced. */
async function rejection(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof GatewayError) return error;
    if (error instanceof FailedAfterProduction && error.error instanceof GatewayError)
      return error.error;
    throw error;
  }
  assert.fail('expected the request to fail');
}

describe('the channel router', () => {
  let primary: FakeDashScope;
  let backup: FakeDashScope;
  let openai: FakeOpenAi;
  let storage: Storage;
  const routers: ReloadableRouter[] = [];

  before(async () => {
    [primary, backup, openai, storage] = await Promise.all([
      startFakeDashScope('sk-primary-key-111'),
      startFakeDashScope('sk-backup-key-222'),
      startFakeOpenAi(),
      temporaryStorage(),
    ]);
  });
  after(async () => {
    await Promise.all(routers.map((router) => router.close()));
    await Promise.all([primary.close(), backup.close(), openai.close(), storage.dispose()]);
  });
  beforeEach(() => {
    primary.requests.length = 0;
    backup.requests.length = 0;
  });

  const ds = (fake: FakeDashScope, name: string, fields: Record<string, unknown> = {}) => ({
    name,
    type: 'dashscope',
    base_url: fake.url,
    api_key: fake.apiKey,
    poll_interval_ms: 20,
    poll_max_interval_ms: 40,
    ...fields,
  });
  const router = (
    configs: ChannelConfig[],
    options: Partial<Parameters<typeof routerFor>[1]> = {},
  ) => {
    const created = routerFor(configs, { storage, ...options });
    routers.push(created);
    return created;
  };
  const submissions = (fake: FakeDashScope) => fake.submissions().length;

  it('serves from the first tier and says which channel served and how long the upstream took', async () => {
    const engine = router(
      channels([ds(primary, 'ds-primary'), ds(backup, 'ds-backup', { priority: 1 })]),
    );
    const output = await outputOf(engine.generate(jobFor(requestBody(MODEL_A))));
    assert.equal(output.channel, 'ds-primary');
    assert.equal(typeof output.upstreamMs, 'number');
    assert.equal(output.imagesReported, 1);
    assert.deepEqual([submissions(primary), submissions(backup)], [1, 0]);
  });

  it('reports the upstream time to a fraction of a millisecond, from a monotonic clock', async () => {
    // A wall clock that stands still, and a monotonic one 0.375 ms later at the attempt's end.
    const monotonic = [1_000.125, 1_000.5];
    const engine = router(channels([ds(primary, 'ds-primary')]), {
      now: () => 1_700_000_000_000,
      monotonicNow: () => monotonic.shift() ?? Number.NaN,
    });
    const output = await outputOf(engine.generate(jobFor(requestBody(MODEL_A))));
    assert.equal(output.upstreamMs, 0.375);
    assert.deepEqual(monotonic, [], 'read once as the attempt starts and once as it ends');
    assert.equal(engine.status()[0]?.stats.lastLatencyMs, 0.4, 'shown to a tenth of a millisecond');
  });

  it('fails over to the next channel on 5xx, 429, 200-with-error and refused connections', async () => {
    const engine = router(
      channels([ds(primary, 'ds-primary'), ds(backup, 'ds-backup', { priority: 1 })]),
    );
    const scripts = [
      { kind: 'error', status: 500, code: 'InternalError', message: 'boom' },
      { kind: 'error', status: 429, code: 'Throttling.RateQuota', message: 'slow down' },
      { kind: 'error', status: 200, code: 'InternalError.Algo', message: 'algo' },
    ] as const;
    for (const script of scripts) {
      primary.script(script);
      const output = await outputOf(engine.generate(jobFor(requestBody(MODEL_A))));
      assert.equal(output.channel, 'ds-backup', script.code);
    }
    const closed = await startFakeDashScope();
    await closed.close();
    const withDeadPrimary = router(
      channels([
        ds(closed, 'dead', { api_key: closed.apiKey }),
        ds(backup, 'ds-backup', { priority: 1 }),
      ]),
    );
    assert.equal(
      (await outputOf(withDeadPrimary.generate(jobFor(requestBody(MODEL_A))))).channel,
      'ds-backup',
    );
  });

  it('passes upstream InvalidParameter and DataInspectionFailed to the caller without trying another channel', async () => {
    const engine = router(
      channels([ds(primary, 'ds-primary'), ds(backup, 'ds-backup', { priority: 1 })]),
    );
    primary.script(
      { kind: 'error', status: 400, code: 'InvalidParameter', message: 'the prompt is too exotic' },
      {
        kind: 'error',
        status: 400,
        code: 'DataInspectionFailed',
        message: 'Input data may contain inappropriate content.',
      },
    );
    const invalid = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.deepEqual(
      [invalid.status, invalid.code, invalid.message],
      [400, 'InvalidParameter', 'the prompt is too exotic'],
    );
    assert.ok(invalid instanceof ChannelFailure, 'the ledger learns which channel refused it');
    assert.equal(invalid.channel, 'ds-primary');
    const moderated = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.deepEqual([moderated.status, moderated.code], [400, 'DataInspectionFailed']);
    assert.equal(submissions(backup), 0);
  });

  it('never sends a request again after a time-out once it was sent, so nothing is produced twice', async () => {
    const engine = router(
      channels([
        ds(primary, 'ds-primary', { timeout_ms: 300 }),
        ds(backup, 'ds-backup', { priority: 1 }),
      ]),
    );
    primary.script({ kind: 'hang' });
    const started = Date.now();
    const error = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.ok(Date.now() - started < 2_000);
    assert.equal(error.code, 'ModelUnavailable');
    assert.match(
      error.message,
      /ds-primary: timed out after the request was sent \(limit 300 ms\)/,
    );
    assert.match(
      error.message,
      /not sent to another channel because ds-primary may have accepted it/,
    );
    assert.ok(error.headers['retry-after'] !== undefined);
    assert.deepEqual([submissions(primary), submissions(backup)], [1, 0]);

    primary.script({ kind: 'reset' });
    const reset = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.equal(reset.code, 'UpstreamError');
    assert.equal(submissions(backup), 0);
  });

  it('answers 502 UpstreamError naming every channel and why when all fail with upstream errors, without keys', async () => {
    const engine = router(
      channels([ds(primary, 'ds-primary'), ds(backup, 'ds-backup', { priority: 1 })]),
    );
    primary.script({ kind: 'error', status: 500, code: 'InternalError', message: 'primary broke' });
    backup.script({ kind: 'error', status: 200, code: 'InternalError', message: 'backup broke' });
    const error = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.equal(error.code, 'UpstreamError');
    assert.equal(error.status, 502);
    assert.match(
      error.message,
      /ds-primary: HTTP 500 InternalError: primary broke; ds-backup: HTTP 200 InternalError: backup broke/,
    );
    assert.ok(!error.message.includes(primary.apiKey) && !error.message.includes(backup.apiKey));
    assert.ok(error instanceof ChannelFailure);
    assert.equal(error.channel, 'ds-backup', 'the last channel tried');
    assert.ok(error.upstreamMs >= 0);
  });

  it('answers 503 ModelUnavailable with the upstream Retry-After when every channel is throttled or down', async () => {
    const closed = await startFakeDashScope();
    await closed.close();
    const engine = router(
      channels([
        ds(primary, 'ds-primary'),
        ds(closed, 'ds-dead', { priority: 1, api_key: closed.apiKey }),
      ]),
    );
    primary.script({
      kind: 'error',
      status: 429,
      code: 'Throttling.RateQuota',
      message: 'rate',
      retryAfter: '42',
    });
    const error = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.equal(error.code, 'ModelUnavailable');
    assert.equal(error.headers['retry-after'], '42');
    assert.match(error.message, /ds-primary: throttled .*; ds-dead: connection refused/);
  });

  it('takes a channel whose key is rejected out of rotation and reports it', async () => {
    const engine = router(
      channels([
        ds(primary, 'ds-bad-key', { api_key: 'sk-revoked-key-999' }),
        ds(backup, 'ds-backup', { priority: 1 }),
      ]),
    );
    assert.equal(
      (await outputOf(engine.generate(jobFor(requestBody(MODEL_A))))).channel,
      'ds-backup',
    );
    assert.equal(
      (await outputOf(engine.generate(jobFor(requestBody(MODEL_A))))).channel,
      'ds-backup',
    );
    assert.equal(primary.requests.length, 1, 'the rejected channel is not asked again');
    const status = engine.status().find((channel) => channel.name === 'ds-bad-key');
    assert.equal(status?.health, 'key-rejected');
    assert.match(status?.keyRejected?.detail ?? '', /key rejected \(HTTP 401 InvalidApiKey/);
    assert.ok(!JSON.stringify(engine.status()).includes('sk-revoked-key-999'));
  });

  it("opens a channel's circuit after consecutive failures, skips it, and closes it again after a successful trial", async () => {
    const clock = { now: Date.now() };
    const engine = router(
      channels([
        ds(primary, 'ds-primary', { breaker_threshold: 2, breaker_cooldown_ms: 10_000 }),
        ds(backup, 'ds-backup', { priority: 1 }),
      ]),
      { now: () => clock.now },
    );
    primary.script(
      { kind: 'error', status: 500, code: 'InternalError', message: '1' },
      { kind: 'error', status: 500, code: 'InternalError', message: '2' },
    );
    await outputOf(engine.generate(jobFor(requestBody(MODEL_A))));
    await outputOf(engine.generate(jobFor(requestBody(MODEL_A))));
    assert.equal(engine.status()[0]?.breaker.state, 'open');
    assert.equal(
      (await outputOf(engine.generate(jobFor(requestBody(MODEL_A))))).channel,
      'ds-backup',
    );
    assert.equal(submissions(primary), 2, 'an open circuit sends nothing');

    clock.now += 10_000;
    assert.equal(engine.status()[0]?.health, 'half-open');
    primary.script({ kind: 'error', status: 500, code: 'InternalError', message: 'trial fails' });
    await outputOf(engine.generate(jobFor(requestBody(MODEL_A))));
    assert.equal(engine.status()[0]?.breaker.state, 'open', 'a failed trial opens it again');
    clock.now += 10_000;
    assert.equal(
      (await outputOf(engine.generate(jobFor(requestBody(MODEL_A))))).channel,
      'ds-primary',
    );
    assert.equal(engine.status()[0]?.breaker.state, 'closed');
    assert.equal(submissions(primary), 4);
  });

  it('answers 503 with Retry-After until the cool-down ends when every circuit is open', async () => {
    const clock = { now: Date.now() };
    const engine = router(
      channels([ds(primary, 'ds-primary', { breaker_threshold: 1, breaker_cooldown_ms: 20_000 })]),
      { now: () => clock.now },
    );
    primary.script({ kind: 'error', status: 500, code: 'InternalError', message: 'x' });
    assert.equal(
      (await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))))).code,
      'UpstreamError',
    );
    clock.now += 5_000;
    const open = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.equal(open.code, 'ModelUnavailable');
    assert.equal(open.headers['retry-after'], '15');
    assert.match(open.message, /ds-primary: not tried: circuit open/);
  });

  it('bounds the whole request by the routing deadline, also while polling an async task', async () => {
    const engine = router(
      channels([ds(primary, 'ds-primary', { mode: 'async', timeout_ms: 60_000 })]),
      { deadlineMs: 400 },
    );
    primary.script({ kind: 'task', progression: ['PENDING', 'RUNNING'] });
    const started = Date.now();
    const error = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 350 && elapsed < 2_000, `${elapsed} ms`);
    assert.equal(error.code, 'ModelUnavailable');
    // The limit is what was left of the 400 ms when the attempt began, a millisecond or two less
    // when the clock ticked in between.
    const limit = /timed out while task .* ran \(limit (\d+) ms\)/.exec(error.message);
    assert.ok(limit, error.message);
    assert.ok(Number(limit[1]) > 350 && Number(limit[1]) <= 400, error.message);
  });

  it('cancels the upstream task and stops when the caller disconnects', async () => {
    const engine = router(
      channels([
        ds(primary, 'ds-primary', { mode: 'async' }),
        ds(backup, 'ds-backup', { priority: 1 }),
      ]),
    );
    primary.script({ kind: 'task', progression: ['PENDING'] });
    const caller = new AbortController();
    void primary.nextPoll().then(() => caller.abort(new Error('caller disconnected')));
    const cancelsBefore = primary.cancels().length;
    await assert.rejects(
      outputOf(engine.generate(jobFor(requestBody(MODEL_A), { signal: caller.signal }))),
      /caller disconnected/,
    );
    assert.equal(primary.cancels().length, cancelsBefore + 1);
    assert.equal(submissions(backup), 0, 'nothing is sent elsewhere for a caller who left');
  });

  it('reads a sync answer to its end when the caller leaves, reports what the upstream produced, and fails with CallerGone', async () => {
    const engine = router(
      channels([ds(primary, 'ds-primary'), ds(backup, 'ds-backup', { priority: 1 })]),
    );
    primary.script({ kind: 'succeed', images: 2, imageCount: 2, delayMs: 300 });
    const caller = new AbortController();
    const job = jobFor(requestBody(MODEL_A, { n: 2 }), { signal: caller.signal });
    const submitted = submissions(primary);
    const generating = outputOf(engine.generate(job));
    await eventually(() => submissions(primary) > submitted, 5000, 'the upstream is working');
    caller.abort(new CallerGone());
    const failure = await generating.then(
      () => assert.fail('the caller left'),
      (error: unknown) => error,
    );
    assert.ok(failure instanceof FailedAfterProduction, 'the failure carries what was produced');
    assert.ok(failure.error instanceof CallerGone);
    const { produced } = failure;
    assert.deepEqual(
      [produced.channel, produced.imagesReported, produced.imagesReceived],
      ['ds-primary', 2, 2],
    );
    assert.equal(submissions(backup), 0, 'nothing is sent elsewhere for a caller who left');
  });

  it('re-hosts upstream images into our storage (small ones whole), and serves them from our URLs', async () => {
    const saved: string[] = [];
    const spyStorage = {
      ...storage,
      results: {
        save: async (png: Buffer | Readable) => {
          saved.push(Buffer.isBuffer(png) ? 'buffer' : 'stream');
          return storage.results.save(png);
        },
      },
    };
    const engine = router(channels([ds(primary, 'ds-primary')]), { storage: spyStorage });
    primary.script({ kind: 'succeed', images: 2 });
    const output = await outputOf(engine.generate(jobFor(requestBody(MODEL_A, { n: 2 }))));
    assert.deepEqual(saved, ['buffer', 'buffer'], 'small images of declared length are read whole');
    const app = Fastify({ logger: false });
    registerImageRoutes(app, { blobs: storage.blobs, urls: storage.urls });
    const expected = Buffer.from(await (await fetch(`${primary.url}/results/x.png`)).arrayBuffer());
    for (const image of output.images) {
      assert.ok(image.kind === 'stored');
      assert.match(image.url, /^http:\/\/gateway\.test\/images\//);
      const url = new URL(image.url);
      const served = await app.inject({ method: 'GET', url: url.pathname + url.search });
      assert.equal(served.statusCode, 200);
      assert.equal(served.headers['content-type'], 'image/png');
      assert.deepEqual(served.rawPayload, expected);
    }
    await app.close();
  });

  it('passes upstream URLs through when the channel says so', async () => {
    const engine = router(channels([ds(primary, 'ds-primary', { pass_through_urls: true })]));
    const output = await outputOf(engine.generate(jobFor(requestBody(MODEL_A))));
    assert.ok(output.images[0]?.kind === 'upstream');
    assert.ok(output.images[0].url.startsWith(`${primary.url}/results/`));
  });

  it('answers 502 when a generated image cannot be fetched, without generating again', async () => {
    const engine = router(
      channels([ds(primary, 'ds-primary'), ds(backup, 'ds-backup', { priority: 1 })]),
    );
    primary.script({ kind: 'succeed', expiredUrls: true });
    const error = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.equal(error.code, 'UpstreamError');
    assert.equal(
      error.message,
      'could not fetch an image generated by channel ds-primary: HTTP 403',
    );
    assert.equal(submissions(backup), 0);
  });

  it('answers 500 when our storage cannot keep the images, and does not hold it against the channel', async () => {
    const failingStorage = {
      ...storage,
      results: {
        save: async () => {
          throw Object.assign(new Error('EIO: i/o error, write /var/lib/imagegate/x'), {
            code: 'EIO',
          });
        },
      },
    };
    const engine = router(
      channels([ds(primary, 'ds-primary'), ds(backup, 'ds-backup', { priority: 1 })]),
      { storage: failingStorage },
    );
    const error = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.deepEqual([error.status, error.code], [500, 'InternalError']);
    assert.doesNotMatch(error.message, /EIO|\/var/);
    assert.equal(submissions(backup), 0, 'the images exist: nothing is generated again');
    const stats = engine.status().find((channel) => channel.name === 'ds-primary')?.stats;
    assert.deepEqual([stats?.successes, stats?.failures, stats?.lastFailure], [1, 0, undefined]);

    primary.script({ kind: 'succeed', expiredUrls: true });
    await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    const after = engine.status().find((channel) => channel.name === 'ds-primary')?.stats;
    assert.equal(after?.failures, 1, 'an image the upstream cannot deliver does count');
  });

  it('answers 503 NoAvailableChannel for a model no channel serves, or a feature none supports', async () => {
    const onlyModelB = router(
      channels([ds(primary, 'ds-b', { models: { [MODEL_B]: 'qwen-image-2.0-pro' } })]),
    );
    const unserved = await rejection(outputOf(onlyModelB.generate(jobFor(requestBody(MODEL_A)))));
    assert.deepEqual(
      [unserved.status, unserved.code, unserved.message],
      [503, 'NoAvailableChannel', 'no channel is configured for model gen-2.7-image-pro'],
    );

    const onlyOpenAi = router(
      channels([
        {
          name: 'oa',
          type: 'openai',
          base_url: openai.url,
          api_key: openai.apiKey,
          models: { [MODEL_A]: 'gpt-image-1' },
        },
      ]),
    );
    const bbox = await rejection(
      outputOf(
        onlyOpenAi.generate(
          jobFor(requestBody(MODEL_A, { bbox_list: [[[0, 0, 10, 10]]] }, ['https://a/1.png'])),
        ),
      ),
    );
    assert.equal(bbox.code, 'NoAvailableChannel');
    assert.equal(
      bbox.message,
      'no channel for model gen-2.7-image-pro supports bbox editing (parameters.bbox_list)',
    );
  });

  it('routes only to capable channels: a sequential request skips the OpenAI tier', async () => {
    const engine = router(
      channels([
        {
          name: 'oa',
          type: 'openai',
          base_url: openai.url,
          api_key: openai.apiKey,
          models: { [MODEL_A]: 'gpt-image-1' },
        },
        ds(primary, 'ds-primary', { priority: 1 }),
      ]),
    );
    const callsBefore = openai.calls.length;
    primary.script({ kind: 'succeed', images: 3, imageCount: 3 });
    const output = await outputOf(
      engine.generate(jobFor(requestBody(MODEL_A, { enable_sequential: true }))),
    );
    assert.equal(output.channel, 'ds-primary');
    assert.equal(output.imagesReported, 3);
    assert.equal(openai.calls.length, callsBefore);
  });

  it('serves OpenAI channels: generations and multipart edits, b64_json at the closest accepted size', async () => {
    const engine = router(
      channels([
        {
          name: 'oa',
          type: 'openai',
          base_url: `${openai.url}/v1`,
          api_key: openai.apiKey,
          models: { [MODEL_A]: 'gpt-image-1', [MODEL_B]: 'gpt-image-1' },
        },
      ]),
    );
    const text = await outputOf(
      engine.generate(jobFor(requestBody(MODEL_A, { size: '1024*768', n: 2 }))),
    );
    assert.deepEqual(
      [text.channel, text.images.length, text.width, text.height],
      ['oa', 2, 1536, 1024],
    );
    assert.ok(text.images.every((image) => image.kind === 'png'));
    const generation = openai.calls.at(-1);
    assert.deepEqual(
      [generation?.path, generation?.fields.size, generation?.fields.response_format],
      ['/v1/images/generations', '1536x1024', 'b64_json'],
    );

    const input = await loadedPng(300, 450, 'input.messages[0].content[0].image');
    const edit = await outputOf(
      engine.generate(
        jobFor(
          requestBody(MODEL_B, {}, [`data:image/png;base64,${input.bytes().toString('base64')}`]),
          { inputs: [input] },
        ),
      ),
    );
    assert.deepEqual([edit.width, edit.height], [1024, 1536]);
    const call = openai.calls.at(-1);
    assert.equal(call?.path, '/v1/images/edits');
    assert.deepEqual(
      call?.files.map((file) => [file.field, file.type, file.bytes]),
      [['image', 'image/png', input.bytes().length]],
    );
  });

  it('reports an OpenAI key rejection without the masked key OpenAI echoes', async () => {
    const engine = router(
      channels([
        {
          name: 'oa',
          type: 'openai',
          base_url: openai.url,
          api_key: 'sk-wrong-openai-key-xyz',
          models: { [MODEL_A]: 'gpt-image-1' },
        },
      ]),
    );
    const error = await rejection(outputOf(engine.generate(jobFor(requestBody(MODEL_A)))));
    assert.equal(error.code, 'ModelUnavailable');
    assert.match(
      error.message,
      /oa: key rejected \(HTTP 401 invalid_api_key: Incorrect API key provided: \[redacted\]/,
    );
    assert.ok(!error.message.includes('sk-wro'));
  });

  it('honours weights within a tier over many requests', async () => {
    const served = new Map<string, number>();
    let created = 0;
    const tagged = (): Engine<PngImage> => {
      const tag = `engine-${created++}`;
      return {
        generate: (_job: EngineJob) =>
          answersAtOnce(async (): Promise<EngineOutput<PngImage>> => {
            served.set(tag, (served.get(tag) ?? 0) + 1);
            return { images: [], width: 1, height: 1 };
          }),
      };
    };
    const engine = router(
      channels([
        { name: 'light', type: 'local', weight: 1 },
        { name: 'heavy', type: 'local', weight: 4 },
        { name: 'spare', type: 'local', weight: 100, priority: 1 },
      ]),
      { random: seededRandom(11), localEngine: tagged },
    );
    const requests = 5_000;
    const job = jobFor(requestBody(MODEL_B));
    for (let i = 0; i < requests; i++) await outputOf(engine.generate(job));
    const light = served.get('engine-0') ?? 0;
    const heavy = served.get('engine-1') ?? 0;
    assert.equal(
      served.get('engine-2'),
      undefined,
      'a lower tier only serves when the first fails',
    );
    const expected = requests * 0.2;
    const sd = Math.sqrt(requests * 0.2 * 0.8);
    assert.ok(
      Math.abs(light - expected) < 4 * sd,
      `light served ${light}, expected about ${expected}`,
    );
    assert.equal(light + heavy, requests);
  });
});
