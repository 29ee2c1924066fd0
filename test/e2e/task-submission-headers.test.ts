import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_B } from '../../src/domain/models.js';
import { DashScopeSdk } from '../helpers/dashscope-sdk.js';
import { getPolicy, type UploadCertificate, uploadFile } from '../helpers/sdk-uploads.js';
import { startTestGateway } from '../helpers/test-gateway.js';
import { testImage } from './e2e-helpers.js';

async function gatewayWithTasks(t: TestContext) {
  const gateway = await startTestGateway({
    env: { IMAGEGATE_TASK_POLL_MS: '50', IMAGEGATE_SHUTDOWN_TIMEOUT_MS: '0' },
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
    const policy = await getPolicy(
      Number(new URL(url).port),
      '/vendor',
      MODEL_B,
      `Bearer ${token}`,
    );
    const certificate = (JSON.parse(policy.body) as { data: UploadCertificate }).data;
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
