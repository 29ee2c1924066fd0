import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_B } from '../../src/domain/models.js';
import { DashScopeSdk } from '../helpers/dashscope-sdk.js';
import { uploadCertificate, uploadFile } from '../helpers/sdk-uploads.js';
import { TASK_RESULT_TTL_MS } from '../../src/tasks/task-service.js';
import { eventually } from '../helpers/billing-gateway.js';
import { startTestGateway } from '../helpers/test-gateway.js';
import { testImage } from './e2e-helpers.js';

async function gatewayWithTasks(
  t: TestContext,
  options: { now?: () => number; env?: Record<string, string> } = {},
) {
  const gateway = await startTestGateway({
    env: { IMAGEGATE_TASK_POLL_MS: '50', IMAGEGATE_SHUTDOWN_TIMEOUT_MS: '0', ...options.env },
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  t.after(() => gateway.close());
  const url = await gateway.listen();
  const { token, record } = await gateway.services.tokenIssuer.issue({
    name: 'tasks',
    account: 'task-co',
    admin: false,
    expiresInSeconds: undefined,
  });
  return {
    gateway,
    url,
    token,
    tokenId: record.id,
    sdk: new DashScopeSdk(`${url}/vendor/api/v1`, token),
  };
}

describe('the headers of a task submission, when the task runs later', () => {
  it('async_call with a local file: the oss:// upload is resolved when the task runs', async (t) => {
    const { url, token, sdk } = await gatewayWithTasks(t);
    // What the SDK does for file:// inputs: a certificate, an upload, then oss:// with the header.
    const certificate = await uploadCertificate(
      Number(new URL(url).port),
      '/vendor',
      MODEL_B,
      `Bearer ${token}`,
    );
    const uploaded = await uploadFile(certificate, 'cat.png', await testImage(320, 256, 0, 'png'));
    assert.equal(uploaded.status, 200);
    const submitted = await sdk.asyncCall(
      MODEL_B,
      [
        {
          role: 'user',
          content: [{ image: `oss://${certificate.upload_dir}/cat.png` }, { text: 'autumn' }],
        },
      ],
      {},
      { 'X-DashScope-OssResourceResolve': 'enable' },
    );
    assert.equal(submitted.status_code, 200);
    const done = await sdk.wait(String(submitted.output?.task_id));
    assert.equal(done.output?.task_status, 'SUCCEEDED', JSON.stringify(done.output));
  });

  it('X-DashScope-Async on the multimodal-generation path makes a task, not a synchronous answer', async (t) => {
    const { url, token, sdk } = await gatewayWithTasks(t);
    const response = await fetch(
      `${url}/vendor/api/v1/services/aigc/multimodal-generation/generation`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'X-DashScope-Async': 'enable',
        },
        body: JSON.stringify({
          model: MODEL_B,
          input: { messages: [{ role: 'user', content: [{ text: 'a lighthouse' }] }] },
        }),
      },
    );
    assert.equal(response.status, 200);
    const answer = (await response.json()) as { output: Record<string, unknown> };
    assert.deepEqual(Object.keys(answer.output).sort(), ['task_id', 'task_status']);
    assert.equal(answer.output.task_status, 'PENDING');
    const done = await sdk.wait(String(answer.output.task_id));
    assert.equal(done.output?.task_status, 'SUCCEEDED');
  });

  it('a finished task is swept with its images, once they expire', async (t) => {
    const clock = { now: Date.now() };
    const { gateway, sdk } = await gatewayWithTasks(t, { now: () => clock.now });
    const submitted = await sdk.asyncCall(MODEL_B, [
      { role: 'user', content: [{ text: 'a lighthouse' }] },
    ]);
    const taskId = String(submitted.output?.task_id);
    assert.equal((await sdk.wait(taskId)).output?.task_status, 'SUCCEEDED');
    const rows = () =>
      gateway.services.database.db
        .selectFrom('tasks')
        .select('id')
        .where('id', '=', taskId)
        .execute();
    assert.equal((await rows()).length, 1);
    // Past the images' 24 hours and the sweep's interval: the next poll deletes it.
    clock.now += TASK_RESULT_TTL_MS + 2 * 60_000;
    await eventually(async () => (await rows()).length === 0);
    assert.equal((await sdk.fetch(taskId)).status_code, 404);
  });

  it('the upload certificate names the public base URL when one is set', async (t) => {
    const { url, token } = await gatewayWithTasks(t, {
      env: { IMAGEGATE_PUBLIC_BASE_URL: 'https://images.example.com/gw' },
    });
    const certificate = await uploadCertificate(
      Number(new URL(url).port),
      '/vendor',
      MODEL_B,
      `Bearer ${token}`,
    );
    assert.match(certificate.upload_host, /^https:\/\/images\.example\.com\/gw\/vendor\//);
  });

  it('X-DashScope-WorkSpace is recorded in the task ledger row', async (t) => {
    const { gateway, tokenId, sdk } = await gatewayWithTasks(t);
    const submitted = await sdk.asyncCall(
      MODEL_B,
      [{ role: 'user', content: [{ text: 'a lighthouse' }] }],
      {},
      { 'X-DashScope-WorkSpace': 'ws-async' },
    );
    const done = await sdk.wait(String(submitted.output?.task_id));
    assert.equal(done.output?.task_status, 'SUCCEEDED');
    await gateway.admission.ledger.flush();
    const rows = await gateway.admission.usage.list({ tokenId }, 10);
    assert.deepEqual(
      rows.map((row) => [row.workspace, row.status]),
      [['ws-async', 200]],
    );
  });
});
