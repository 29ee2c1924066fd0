import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { reloadChannelsOnSignal } from '../../src/bootstrap/reload-channels-on-signal.js';
import type { ReloadableRouter } from '../../src/channels/reloadable-router.js';
import { loadConfig } from '../../src/config/load-config.js';
import { silentLog } from '../../src/support/log.js';
import { type FakeDashScope, startFakeDashScope } from '../fixtures/fake-dashscope.js';
import {
  channels,
  jobFor,
  MODEL_A,
  requestBody,
  routerFor,
  temporaryStorage,
} from '../channels/channel-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

describe('reloading the channel set', () => {
  let first: FakeDashScope;
  let second: FakeDashScope;
  let storage: Awaited<ReturnType<typeof temporaryStorage>>;
  const routers: ReloadableRouter[] = [];

  before(async () => {
    [first, second, storage] = await Promise.all([
      startFakeDashScope('sk-first-key-0001'),
      startFakeDashScope('sk-second-key-0002'),
      temporaryStorage(),
    ]);
  });
  after(async () => {
    await Promise.all(routers.map((router) => router.close()));
    await Promise.all([first.close(), second.close(), storage.dispose()]);
  });

  const entry = (fake: FakeDashScope, name: string, fields: Record<string, unknown> = {}) => ({
    name,
    type: 'dashscope',
    base_url: fake.url,
    api_key: fake.apiKey,
    ...fields,
  });
  const newRouter = (entries: unknown[], now?: () => number) => {
    const router = routerFor(channels(entries), { storage, ...(now === undefined ? {} : { now }) });
    routers.push(router);
    return router;
  };

  it('swaps the set for new requests while a request in flight finishes on the channel it started with', async () => {
    const router = newRouter([entry(first, 'old')]);
    // A job is bound to the channel set current when generate() is called, so reloading before
    // anything is awaited finds this request in flight without waiting on a timer.
    const inFlight = outputOf(router.generate(jobFor(requestBody(MODEL_A))));
    const summary = router.reload({
      channels: channels([entry(second, 'new')]),
      routingDeadlineMs: 60_000,
    });
    assert.deepEqual(summary, { added: ['new'], removed: ['old'], changed: [], unchanged: [] });
    const fresh = await outputOf(router.generate(jobFor(requestBody(MODEL_A))));
    assert.equal(fresh.channel, 'new');
    const finished = await inFlight;
    assert.equal(finished.channel, 'old', 'the request in flight was not dropped');
    assert.ok(
      finished.images[0]?.kind === 'stored' &&
        finished.images[0].url.startsWith('http://gateway.test/images/'),
    );
    assert.deepEqual(
      router.status().map((channel) => channel.name),
      ['new'],
    );
  });

  it('keeps breaker state and counters of unchanged channels, and gives a rejected key another chance', async () => {
    const clock = { now: Date.now() };
    const router = newRouter(
      [
        entry(first, 'steady', { breaker_threshold: 1, breaker_cooldown_ms: 60_000 }),
        entry(second, 'revoked', { api_key: 'sk-revoked-000', priority: 1 }),
      ],
      () => clock.now,
    );
    first.script({ kind: 'error', status: 500, code: 'InternalError', message: 'x' });
    await assert.rejects(outputOf(router.generate(jobFor(requestBody(MODEL_A)))));
    assert.deepEqual(
      router.status().map((channel) => channel.health),
      ['open', 'key-rejected'],
    );

    const sameAgain = channels([
      entry(first, 'steady', { breaker_threshold: 1, breaker_cooldown_ms: 60_000 }),
      entry(second, 'revoked', { api_key: 'sk-revoked-000', priority: 1 }),
    ]);
    const summary = router.reload({ channels: sameAgain, routingDeadlineMs: 60_000 });
    assert.deepEqual(summary.unchanged, ['steady', 'revoked']);
    const [steady, revoked] = router.status();
    assert.equal(steady?.health, 'open', 'an unchanged channel keeps its open circuit');
    assert.equal(steady?.stats.failures, 1);
    assert.equal(revoked?.health, 'available', 'a reload clears a rejected key');

    const changed = router.reload({
      channels: channels([
        entry(first, 'steady', { breaker_threshold: 2, breaker_cooldown_ms: 60_000 }),
      ]),
      routingDeadlineMs: 60_000,
    });
    assert.deepEqual(changed, {
      added: [],
      removed: ['revoked'],
      changed: ['steady'],
      unchanged: [],
    });
    assert.equal(router.status()[0]?.health, 'available', 'a changed channel starts afresh');
  });

  it('reloads from the config file on SIGHUP and keeps the running set when the new file has problems', async () => {
    const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-reload-'));
    const file = path.join(directory, 'gateway.yaml');
    const env = { IMAGEGATE_CONFIG: file, FIRST_KEY: first.apiKey, SECOND_KEY: second.apiKey };
    const channelYaml = (name: string, fake: FakeDashScope, keyVariable: string) =>
      [
        'channels:',
        `  - name: ${name}`,
        '    type: dashscope',
        `    base_url: ${fake.url}`,
        `    api_key_env: ${keyVariable}`,
      ].join('\n');
    const logs: { level: string; fields: object; message: string }[] = [];
    const emitter = new EventEmitter();
    try {
      await writeFile(file, channelYaml('from-file-1', first, 'FIRST_KEY'));
      const config = loadConfig(env);
      const router = routerFor(config.channels, { storage, deadlineMs: config.routingDeadlineMs });
      routers.push(router);
      const uninstall = reloadChannelsOnSignal({
        router,
        loadConfig: () => loadConfig(env),
        log: {
          ...silentLog,
          info: (fields, message) => logs.push({ level: 'info', fields, message }),
          error: (fields, message) => logs.push({ level: 'error', fields, message }),
        },
        emitter,
      });

      await writeFile(file, channelYaml('from-file-2', second, 'SECOND_KEY'));
      // The reload runs to completion inside emit(): nothing to wait for.
      emitter.emit('SIGHUP');
      assert.deepEqual(
        router.status().map((channel) => channel.name),
        ['from-file-2'],
      );
      assert.equal(
        (await outputOf(router.generate(jobFor(requestBody(MODEL_A))))).channel,
        'from-file-2',
      );
      assert.deepEqual(logs.at(-1), {
        level: 'info',
        fields: {
          signal: 'SIGHUP',
          added: ['from-file-2'],
          removed: ['from-file-1'],
          changed: [],
          unchanged: [],
        },
        message: 'channels reloaded',
      });

      await writeFile(file, channelYaml('broken', second, 'UNSET_VARIABLE'));
      emitter.emit('SIGHUP');
      assert.deepEqual(
        router.status().map((channel) => channel.name),
        ['from-file-2'],
      );
      assert.equal(logs.at(-1)?.level, 'error');
      assert.deepEqual((logs.at(-1)?.fields as { problems?: unknown } | undefined)?.problems, [
        `${file}: channels[0].api_key_env names UNSET_VARIABLE, which is not set`,
      ]);
      assert.ok(
        !JSON.stringify(logs).includes(second.apiKey) &&
          !JSON.stringify(logs).includes(first.apiKey),
      );

      uninstall();
      assert.equal(emitter.listenerCount('SIGHUP'), 0);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
