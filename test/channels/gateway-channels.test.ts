import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { type FakeDashScope, startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { MODEL_A, requestBody } from './channel-fixtures.js';

describe('a gateway configured with a DashScope channel', () => {
  let fake: FakeDashScope;
  let gateway: TestGateway;
  let directory: string;
  let env: Record<string, string>;

  before(async () => {
    fake = await startFakeDashScope('sk-gateway-e2e-key-7');
    directory = await mkdtemp(path.join(tmpdir(), 'imagegate-gw-channels-'));
    const file = path.join(directory, 'gateway.yaml');
    await writeFile(
      file,
      [
        'channels:',
        '  - name: ds-primary',
        '    type: dashscope',
        `    base_url: ${fake.url}`,
        '    api_key_env: TEST_DASHSCOPE_KEY',
      ].join('\n'),
    );
    env = { IMAGEGATE_CONFIG: file, TEST_DASHSCOPE_KEY: fake.apiKey };
    gateway = await startTestGateway({ env });
  });
  after(async () => {
    await gateway.close();
    await fake.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('answers a generation from the upstream with images re-hosted behind our signed URLs', async () => {
    fake.script({ kind: 'succeed', images: 2 });
    const response = await gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: { authorization: await gateway.bearer(), 'content-type': 'application/json' },
      payload: requestBody(MODEL_A, { n: 2 }),
    });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as {
      output: { choices: { message: { content: { image: string }[] } }[] };
      usage: { image_count: number; size: string };
    };
    const urls = body.output.choices[0]?.message.content.map((item) => item.image) ?? [];
    assert.equal(urls.length, 2);
    assert.equal(body.usage.image_count, 2);
    assert.equal(body.usage.size, '96*64');
    for (const url of urls) {
      assert.ok(!url.startsWith(fake.url), 'not the upstream URL');
      const parsed = new URL(url);
      const image = await gateway.app.inject({
        method: 'GET',
        url: parsed.pathname + parsed.search,
      });
      assert.equal(image.statusCode, 200);
      assert.equal(image.headers['content-type'], 'image/png');
    }
  });

  it('passes an upstream moderation refusal to the caller as 400 DataInspectionFailed', async () => {
    fake.script({
      kind: 'error',
      status: 400,
      code: 'DataInspectionFailed',
      message: 'Input data may contain inappropriate content.',
    });
    const response = await gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: { authorization: await gateway.bearer(), 'content-type': 'application/json' },
      payload: requestBody(MODEL_A),
    });
    assert.equal(response.statusCode, 400);
    assert.deepEqual(
      [response.json().code, response.json().message],
      ['DataInspectionFailed', 'Input data may contain inappropriate content.'],
    );
  });

  it('shows the channel at /admin/channels to admin tokens only, without its key, and swaps it on reload', async () => {
    const denied = await gateway.app.inject({
      method: 'GET',
      url: '/admin/channels',
      headers: { authorization: await gateway.bearer() },
    });
    assert.equal(denied.statusCode, 401);
    const admin = await gateway.bearer({ admin: true });
    const shown = await gateway.app.inject({
      method: 'GET',
      url: '/admin/channels',
      headers: { authorization: admin },
    });
    assert.equal(shown.statusCode, 200);
    assert.ok(!shown.body.includes(fake.apiKey));
    const listed = (shown.json() as { channels: { name: string; stats: { successes: number } }[] })
      .channels;
    assert.deepEqual(
      listed.map((channel) => channel.name),
      ['ds-primary'],
    );
    assert.ok((listed[0]?.stats.successes ?? 0) >= 1);

    gateway.channels.reload(loadConfig({ IMAGEGATE_LOG_LEVEL: 'silent' }));
    const reloaded = await gateway.app.inject({
      method: 'GET',
      url: '/admin/channels',
      headers: { authorization: admin },
    });
    assert.deepEqual(
      (reloaded.json() as { channels: { name: string }[] }).channels.map((channel) => channel.name),
      ['local'],
    );
  });
});
