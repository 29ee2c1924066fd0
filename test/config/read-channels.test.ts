import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { describe, it } from 'node:test';
import { DEFAULT_LOCAL_CHANNEL } from '../../src/config/channel-config.js';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';
import { readChannels } from '../../src/config/read-channels.js';
import { ApiKey, redactKeys } from '../../src/domain/api-key.js';

const SECRET = 'sk-live-very-secret-value-123';

function read(raw: unknown, env: Record<string, string> = {}) {
  const problems: string[] = [];
  const channels = readChannels(raw, env, 'gw.yaml: channels', problems);
  return { channels, problems };
}

describe('reading the channels setting', () => {
  it('gives the built-in local channel when no channels are configured', () => {
    assert.deepEqual(read(undefined), { channels: [DEFAULT_LOCAL_CHANNEL], problems: [] });
    assert.deepEqual(read([]), { channels: [DEFAULT_LOCAL_CHANNEL], problems: [] });
  });

  it('reads a DashScope channel with defaults, the key from its environment variable and the default upstream model names', () => {
    const { channels, problems } = read(
      [
        {
          name: 'ds-primary',
          type: 'dashscope',
          base_url: 'https://dashscope-intl.aliyuncs.com/',
          api_key_env: 'DS_KEY',
        },
      ],
      { DS_KEY: ` ${SECRET} ` },
    );
    assert.deepEqual(problems, []);
    const [channel] = channels;
    assert.ok(channel?.type === 'dashscope');
    assert.equal(channel.baseUrl, 'https://dashscope-intl.aliyuncs.com');
    assert.equal(channel.apiKey.reveal(), SECRET);
    assert.deepEqual(channel.models, {
      'gen-2.7-image-pro': 'wan2.7-image-pro',
      'txt-image-2.0-pro': 'qwen-image-2.0-pro',
    });
    assert.equal(channel.mode, 'sync');
    assert.equal(channel.priority, 0);
    assert.equal(channel.weight, 1);
    assert.equal(channel.timeoutMs, 120_000);
    assert.equal(channel.passThroughUrls, false);
    assert.deepEqual(channel.breaker, { failureThreshold: 5, cooldownMs: 30_000 });
  });

  it('reads every field of the issue example and of an OpenAI-compatible channel', () => {
    const { channels, problems } = read(
      [
        {
          name: 'ds-primary',
          type: 'dashscope',
          base_url: 'https://example-upstream',
          api_key_env: 'DASHSCOPE_API_KEY',
          models: {
            'gen-2.7-image-pro': 'wan2.7-image-pro',
            'txt-image-2.0-pro': 'qwen-image-2.0-pro',
          },
          priority: 0,
          weight: 1,
          timeout_ms: 120000,
          mode: 'async',
          pass_through_urls: true,
          poll_interval_ms: 500,
          poll_max_interval_ms: 4000,
          breaker_threshold: 3,
          breaker_cooldown_ms: 10000,
        },
        {
          name: 'oa',
          type: 'openai',
          base_url: 'http://10.0.0.5:8000/v1',
          api_key: 'inline-key',
          models: { 'txt-image-2.0-pro': 'gpt-image-1' },
          priority: 1,
          weight: 3,
          sizes: ['1024x1024', '1792x1024'],
          max_input_images: 4,
          send_response_format: false,
        },
        { name: 'fallback', type: 'local', priority: 9 },
      ],
      { DASHSCOPE_API_KEY: SECRET },
    );
    assert.deepEqual(problems, []);
    const [ds, oa, local] = channels;
    assert.ok(ds?.type === 'dashscope' && oa?.type === 'openai' && local?.type === 'local');
    assert.equal(ds.mode, 'async');
    assert.equal(ds.passThroughUrls, true);
    assert.deepEqual(ds.poll, { initialMs: 500, maxMs: 4000 });
    assert.deepEqual(ds.breaker, { failureThreshold: 3, cooldownMs: 10_000 });
    assert.equal(oa.baseUrl, 'http://10.0.0.5:8000', "a trailing /v1 is the adapter's to add");
    assert.equal(oa.apiKey?.reveal(), 'inline-key');
    assert.deepEqual(oa.sizes, [
      { width: 1024, height: 1024 },
      { width: 1792, height: 1024 },
    ]);
    assert.equal(oa.maxInputImages, 4);
    assert.equal(oa.sendResponseFormat, false);
    assert.deepEqual(Object.keys(oa.models), ['txt-image-2.0-pro']);
    assert.equal(local.priority, 9);
    assert.deepEqual(Object.keys(local.models).sort(), ['gen-2.7-image-pro', 'txt-image-2.0-pro']);
  });

  it('reports every problem of every entry at once, with its path and never a key', () => {
    const { channels, problems } = read(
      [
        {
          name: 'bad name!',
          type: 'dashscope',
          base_url: 'ftp://x',
          api_key_env: 'MISSING_KEY',
          mode: 'sometimes',
        },
        {
          name: 'b',
          type: 'openai',
          base_url: 'https://u:p@host/',
          api_key: SECRET,
          api_key_env: 'ALSO',
          weight: 0,
        },
        { name: 'c', type: 'carrier-pigeon' },
        {
          name: 'd',
          type: 'local',
          timeout_ms: '5s',
          colour: 'red',
          models: { 'no-such-model': 'x' },
        },
        { name: 'e', type: 'dashscope', base_url: 'https://h', api_key: SECRET },
        { name: 'e', type: 'dashscope', base_url: 'https://h', api_key: SECRET },
        'not a mapping',
      ],
      { ALSO: SECRET },
    );
    assert.deepEqual(
      channels.map((channel) => channel.name),
      ['e'],
    );
    const expected = [
      /^gw\.yaml: channels\[0\]\.name must be a name of letters/,
      /^gw\.yaml: channels\[0\]\.api_key_env names MISSING_KEY, which is not set$/,
      /^gw\.yaml: channels\[0\]\.mode must be one of sync, async$/,
      /^gw\.yaml: channels\[0\]\.base_url must be an http\(s\) URL/,
      /^gw\.yaml: channels\[1\]\.weight must be between 1 and 10000$/,
      /^gw\.yaml: channels\[1\]\.api_key and api_key_env are both set; use one$/,
      /^gw\.yaml: channels\[1\]\.base_url must be an http\(s\) URL without credentials/,
      /^gw\.yaml: channels\[1\]\.models is required$/,
      /^gw\.yaml: channels\[2\]\.type must be one of dashscope, openai, local$/,
      /^gw\.yaml: channels\[3\]\.colour is an unknown setting for local channels$/,
      /^gw\.yaml: channels\[3\]\.timeout_ms must be an integer$/,
      /^gw\.yaml: channels\[3\]\.models\.no-such-model is an unknown model; known: /,
      /^gw\.yaml: channels\[5\]\.name "e" is used by another channel$/,
      /^gw\.yaml: channels\[6\] must be a mapping$/,
    ];
    for (const pattern of expected)
      assert.ok(
        problems.some((problem) => pattern.test(problem)),
        `${pattern} in\n${problems.join('\n')}`,
      );
    assert.equal(problems.length, expected.length, problems.join('\n'));
    assert.ok(problems.every((problem) => !problem.includes(SECRET)));
  });

  it('requires a key for DashScope channels and a base URL for upstream channels', () => {
    const { problems } = read([{ name: 'ds', type: 'dashscope' }]);
    assert.deepEqual(problems, [
      'gw.yaml: channels[0].api_key_env or api_key is required',
      'gw.yaml: channels[0].base_url is required',
    ]);
  });

  it('takes a field left empty as absent, and still reports an empty field it does not know', () => {
    const empty = read(
      [
        { name: 'ds', type: 'dashscope', base_url: 'https://h', api_key: null, api_key_env: 'K' },
        { name: 'l', type: 'local', priority: null, weight: null },
      ],
      { K: SECRET },
    );
    assert.deepEqual(empty.problems, []);
    const [ds, local] = empty.channels;
    assert.equal(ds?.type === 'dashscope' && ds.apiKey.reveal(), SECRET);
    assert.equal(local?.priority, 0);
    assert.equal(local?.weight, 1);

    assert.deepEqual(read([{ name: 'l', type: 'local', colour: null }]).problems, [
      'gw.yaml: channels[0].colour is an unknown setting for local channels',
    ]);
  });
});

describe('channels in the configuration file', () => {
  it('loads channels from IMAGEGATE_CONFIG and reports channel problems with the other settings', async () => {
    const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-config-'));
    const file = path.join(directory, 'gateway.yaml');
    try {
      await writeFile(
        file,
        [
          'routing_deadline_ms: 90000',
          'channels:',
          '  - name: ds-primary',
          '    type: dashscope',
          '    base_url: https://dashscope.aliyuncs.com',
          '    api_key_env: DASHSCOPE_API_KEY',
          '    mode: async',
        ].join('\n'),
      );
      const config = loadConfig({ IMAGEGATE_CONFIG: file, DASHSCOPE_API_KEY: SECRET });
      assert.equal(config.routingDeadlineMs, 90_000);
      assert.equal(config.channels[0]?.name, 'ds-primary');
      assert.ok(!JSON.stringify(config).includes(SECRET), 'a key never serialises');
      assert.ok(!inspect(config, { depth: 10 }).includes(SECRET), 'a key never prints');

      await writeFile(
        file,
        [
          'port: many',
          'channels:',
          '  - name: ds',
          '    type: dashscope',
          '    base_url: https://h',
          '    api_key_env: NOT_SET',
        ].join('\n'),
      );
      assert.throws(
        () => loadConfig({ IMAGEGATE_CONFIG: file }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.problems.length === 2 &&
          error.problems.some((problem) => problem === `${file}: port must be an integer`) &&
          error.problems.some(
            (problem) =>
              problem === `${file}: channels[0].api_key_env names NOT_SET, which is not set`,
          ),
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('defaults to the local channel and a five-minute routing deadline', () => {
    const config = loadConfig({});
    assert.deepEqual(config.channels, [DEFAULT_LOCAL_CHANNEL]);
    assert.equal(config.routingDeadlineMs, 300_000);
  });
});

describe('API keys', () => {
  it('print as [redacted] everywhere and are scrubbed from upstream text', () => {
    const key = new ApiKey(SECRET);
    assert.equal(String(key), '[redacted]');
    assert.equal(JSON.stringify({ key }), '{"key":"[redacted]"}');
    assert.ok(!inspect({ key }).includes(SECRET));
    assert.equal(key.reveal(), SECRET);
    assert.equal(
      redactKeys(`bad key ${SECRET}; also Incorrect API key provided: sk-ab***wxyz.`, key),
      'bad key [redacted]; also Incorrect API key provided: [redacted].',
    );
  });
});
