import assert from 'node:assert/strict';
import { it } from 'node:test';
import { MODEL_A } from '../../src/domain/models.js';
import { DashScopeSdk } from '../helpers/dashscope-sdk.js';
import { startTestGateway } from '../helpers/test-gateway.js';

it("an admin who cancels another token's pending task frees the owner's reservation, not its own", async (t) => {
  // No runner on this node: the task stays PENDING until it is canceled.
  const gateway = await startTestGateway({
    env: { IMAGEGATE_TASK_CONCURRENCY: '0', IMAGEGATE_SHUTDOWN_TIMEOUT_MS: '0' },
  });
  t.after(() => gateway.close());
  const url = `${await gateway.listen()}/vendor/api/v1`;
  const issue = async (name: string, admin: boolean) => {
    const { token, record } = await gateway.services.tokenIssuer.issue({
      name,
      account: name,
      admin,
      expiresInSeconds: undefined,
    });
    await gateway.admission.limits.update(record.id, { imageQuota: 10 });
    return { id: record.id, sdk: new DashScopeSdk(url, token) };
  };
  const owner = await issue('owner', false);
  const admin = await issue('admin', true);
  const standing = async (id: string) => {
    const limits = await gateway.admission.limits.find(id);
    return { used: limits?.imagesUsed, reserved: limits?.imagesReserved };
  };

  const submitted = await owner.sdk.asyncCall(
    MODEL_A,
    [{ role: 'user', content: [{ text: 'x' }] }],
    {
      n: 3,
    },
  );
  const taskId = String(submitted.output?.task_id);
  assert.deepEqual(await standing(owner.id), { used: 0, reserved: 3 });

  const canceled = await admin.sdk.cancel(taskId);
  assert.equal(canceled.status_code, 200);
  assert.deepEqual(await standing(owner.id), { used: 0, reserved: 0 });
  assert.deepEqual(await standing(admin.id), { used: 0, reserved: 0 });
});
