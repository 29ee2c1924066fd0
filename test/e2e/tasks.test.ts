import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import { startFakeDashScope, type FakeDashScope } from '../fixtures/fake-dashscope.js';
import { dashScopeChannelEnv } from '../faults/fault-rig.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { DashScopeSdk } from '../helpers/dashscope-sdk.js';
import { eventually } from '../helpers/billing-gateway.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;
const messages = (text: string, images: string[] = []) => [
  { role: 'user', content: [...images.map((image) => ({ image })), { text }] },
];

interface Caller {
  id: string;
  sdk: DashScopeSdk;
}

async function gatewayOn(
  t: TestContext,
  target: DatabaseTarget,
  env: Record<string, string> = {},
): Promise<TestGateway & { url: string; caller(options?: CallerOptions): Promise<Caller> }> {
  const gateway = await startTestGateway({
    database: target,
    env: { IMAGEGATE_TASK_POLL_MS: '50', IMAGEGATE_SHUTDOWN_TIMEOUT_MS: '0', ...env },
  });
  let closed = false;
  t.after(async () => {
    if (!closed) await gateway.close();
  });
  const url = await gateway.listen();
  return {
    ...gateway,
    url,
    close: async () => {
      closed = true;
      await gateway.close();
    },
    caller: async (options = {}) => {
      const { token, record } = await gateway.services.tokenIssuer.issue({
        name: 'tasks',
        account: options.account ?? 'task-co',
        admin: options.admin ?? false,
        expiresInSeconds: undefined,
      });
      if (options.imageQuota !== undefined)
        await gateway.admission.limits.update(record.id, { imageQuota: options.imageQuota });
      return { id: record.id, sdk: new DashScopeSdk(`${url}/vendor/api/v1`, token) };
    },
  };
}

interface CallerOptions {
  account?: string;
  admin?: boolean;
  imageQuota?: number;
}

async function rowsOf(gateway: TestGateway, tokenId: string) {
  await gateway.admission.ledger.flush();
  return gateway.admission.usage.list({ tokenId }, 1000);
}

async function fakeUpstream(
  t: TestContext,
): Promise<{ fake: FakeDashScope; env: Record<string, string> }> {
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  return { fake, env: await dashScopeChannelEnv(t, fake) };
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`asynchronous tasks over the SDK's wire format (${backend})`, () => {
    it('async_call then wait: PENDING at once, SUCCEEDED with the sync shapes, images fetchable, one billed row', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await gatewayOn(t, target);
      const { id, sdk } = await gateway.caller({ imageQuota: 10 });

      const submitted = await sdk.asyncCall(MODEL_A, messages('a red fox in snow'), { size: '1K' });
      assert.equal(submitted.status_code, 200);
      assert.equal(submitted.output?.task_status, 'PENDING');
      const taskId = submitted.output?.task_id;
      assert.equal(typeof taskId, 'string');

      const done = await sdk.wait(String(taskId));
      assert.equal(done.status_code, 200);
      const output = done.output ?? {};
      assert.equal(output.task_id, taskId);
      assert.equal(output.task_status, 'SUCCEEDED');
      for (const field of ['submit_time', 'scheduled_time', 'end_time'])
        assert.match(String(output[field]), TIME, field);
      assert.equal(output.finished, true);
      const choices = output.choices as {
        finish_reason: string;
        message: { role: string; content: { type: string; image: string }[] };
      }[];
      assert.equal(choices[0]?.finish_reason, 'stop');
      const image = choices[0]?.message.content[0]?.image ?? '';
      const png = await fetch(image);
      assert.equal(png.status, 200);
      assert.equal(png.headers.get('content-type'), 'image/png');
      assert.equal(done.usage?.image_count, 1);
      assert.equal(done.usage?.size, '1024*1024');

      const rows = await rowsOf(gateway, id);
      assert.equal(rows.length, 1, 'one row for the task; submission and polls write none');
      assert.equal(rows[0]?.requestId, submitted.request_id);
      assert.equal(rows[0]?.status, 200);
      assert.equal(rows[0]?.imagesBilled, 1);
      const standing = await gateway.admission.limits.find(id);
      assert.deepEqual([standing?.imagesUsed, standing?.imagesReserved], [1, 0]);
    });

    it('the synchronous image-generation path answers without the header; model B tasks have model B shapes', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await gatewayOn(t, target);
      const { sdk } = await gateway.caller();
      const { token } = await gateway.services.tokenIssuer.issue({
        name: 'sync',
        account: 'task-co',
        admin: false,
        expiresInSeconds: undefined,
      });
      const sync = await fetch(
        `${gateway.url}/vendor/api/v1/services/aigc/image-generation/generation`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: MODEL_B,
            input: { messages: messages('a lighthouse') },
            parameters: { is_async: false },
          }),
        },
      );
      assert.equal(sync.status, 200);
      const body = (await sync.json()) as { output: { choices: unknown[] } };
      assert.equal(body.output.choices.length, 1);

      const submitted = await sdk.asyncCall(MODEL_B, messages('a lighthouse'));
      const done = await sdk.wait(String(submitted.output?.task_id));
      assert.equal(done.output?.task_status, 'SUCCEEDED');
      assert.equal(done.output?.finished, undefined);
      assert.deepEqual(Object.keys(done.usage ?? {}).sort(), ['height', 'image_count', 'width']);
    });

    it('a task that fails ends FAILED with the code and message the synchronous call gets, billing nothing', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await gatewayOn(t, target);
      const { id, sdk } = await gateway.caller({ imageQuota: 10 });
      const blocked = messages('edit this', ['http://127.0.0.1:9/cat.png']);

      const submitted = await sdk.asyncCall(MODEL_A, blocked);
      assert.equal(submitted.status_code, 200);
      const done = await sdk.wait(String(submitted.output?.task_id));
      assert.equal(done.output?.task_status, 'FAILED');

      const sync = await fetch(
        `${gateway.url}/vendor/api/v1/services/aigc/multimodal-generation/generation`,
        {
          method: 'POST',
          headers: {
            authorization: (await gateway.bearer()).toString(),
            'content-type': 'application/json',
          },
          body: JSON.stringify({ model: MODEL_A, input: { messages: blocked } }),
        },
      );
      const syncBody = (await sync.json()) as { code: string; message: string };
      assert.equal(done.output?.code, syncBody.code);
      assert.equal(done.output?.message, syncBody.message);

      const rows = await rowsOf(gateway, id);
      assert.equal(rows.length, 1);
      assert.equal(rows[0]?.status, sync.status);
      assert.equal(rows[0]?.errorCode, syncBody.code);
      assert.equal(rows[0]?.imagesBilled, 0);
      const standing = await gateway.admission.limits.find(id);
      assert.deepEqual([standing?.imagesUsed, standing?.imagesReserved], [0, 0]);
    });

    it('cancel: a PENDING task becomes CANCELED, its reservation freed, its row billing nothing; then 400', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await gatewayOn(t, target, { IMAGEGATE_TASK_CONCURRENCY: '0' });
      const { id, sdk } = await gateway.caller({ imageQuota: 10 });
      const submitted = await sdk.asyncCall(MODEL_A, messages('a fox'), { n: 3 });
      const taskId = String(submitted.output?.task_id);
      assert.equal((await gateway.admission.limits.find(id))?.imagesReserved, 3);

      const canceled = await sdk.cancel(taskId);
      assert.equal(canceled.status_code, 200);
      const fetched = await sdk.fetch(taskId);
      assert.equal(fetched.output?.task_status, 'CANCELED');
      assert.match(String(fetched.output?.end_time), TIME);
      const standing = await gateway.admission.limits.find(id);
      assert.deepEqual([standing?.imagesUsed, standing?.imagesReserved], [0, 0]);
      const rows = await rowsOf(gateway, id);
      assert.equal(rows.length, 1);
      assert.equal(rows[0]?.errorCode, 'Canceled');
      assert.equal(rows[0]?.imagesBilled, 0);
      assert.equal(rows[0]?.costMicros, 0);

      const again = await sdk.cancel(taskId);
      assert.equal(again.status_code, 400);
      assert.equal(again.code, 'UnsupportedOperation');
      assert.match(String(again.message), /is CANCELED; only a PENDING task can be canceled/);
    });

    it('another token gets 404 for a task; an admin token sees it; reads are authenticated', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await gatewayOn(t, target, { IMAGEGATE_TASK_CONCURRENCY: '0' });
      const owner = await gateway.caller();
      const other = await gateway.caller();
      const admin = await gateway.caller({ admin: true, account: 'ops' });
      const taskId = String((await owner.sdk.asyncCall(MODEL_A, messages('x'))).output?.task_id);

      for (const answer of [
        await other.sdk.fetch(taskId),
        await other.sdk.cancel(taskId),
        await owner.sdk.fetch('no-such-task'),
      ]) {
        assert.equal(answer.status_code, 404);
        assert.equal(answer.code, 'NotFound');
      }
      assert.equal((await admin.sdk.fetch(taskId)).output?.task_status, 'PENDING');
      assert.equal((await other.sdk.list()).output?.total, 0);
      assert.equal((await admin.sdk.list()).output?.total, 1);
      const anonymous = await new DashScopeSdk(`${gateway.url}/vendor/api/v1`, 'nope').fetch(
        taskId,
      );
      assert.equal(anonymous.status_code, 401);
    });

    it("list: the caller's tasks, newest first, filtered by status, model and time, paged", async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await gatewayOn(t, target, { IMAGEGATE_TASK_CONCURRENCY: '0' });
      const { sdk } = await gateway.caller();
      const ids: string[] = [];
      for (const model of [MODEL_A, MODEL_B, MODEL_A, MODEL_A, MODEL_B])
        ids.push(String((await sdk.asyncCall(model, messages('x'))).output?.task_id));
      await sdk.cancel(ids[0] as string);

      const page = await sdk.list({ page_size: 2, page_no: 2 });
      assert.equal(page.status_code, 200);
      assert.equal(page.output?.total, 5);
      assert.equal(page.output?.total_page, 3);
      assert.equal(page.output?.page_no, 2);
      const data = page.output?.data as { task_id: string; status: string; model_name: string }[];
      assert.equal(data.length, 2);
      assert.equal(typeof page.request_id, 'string');

      const models = await sdk.list({ model_name: MODEL_B });
      assert.equal(models.output?.total, 2);
      const canceled = await sdk.list({ status: 'CANCELED' });
      assert.deepEqual(
        (canceled.output?.data as { task_id: string }[]).map((task) => task.task_id),
        [ids[0]],
      );
      const future = await sdk.list({ start_time: '29990101000000' });
      assert.equal(future.output?.total, 0);
      const past = await sdk.list({ start_time: '20000101000000', end_time: '29991231235959' });
      assert.equal(past.output?.total, 5);

      const bad = await sdk.list({ status: 'DONE' });
      assert.equal(bad.status_code, 400);
      assert.match(String(bad.message), /^status: must be one of PENDING/);
      const badTime = await sdk.list({ start_time: '2025-01-01' });
      assert.equal(badTime.status_code, 400);
      assert.match(String(badTime.message), /^start_time: /);
    });

    it('Idempotency-Key: a repeated submission answers the same task, and only one task exists', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await gatewayOn(t, target, { IMAGEGATE_TASK_CONCURRENCY: '0' });
      const { id, sdk } = await gateway.caller({ imageQuota: 10 });
      const key = { 'Idempotency-Key': 'task-key-1' };
      const first = await sdk.asyncCall(MODEL_A, messages('x'), { n: 2 }, key);
      const second = await sdk.asyncCall(MODEL_A, messages('x'), { n: 2 }, key);
      assert.equal(second.status_code, 200);
      assert.equal(second.output?.task_id, first.output?.task_id);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.equal((await sdk.list()).output?.total, 1);
      assert.equal((await gateway.admission.limits.find(id))?.imagesReserved, 2);
    });

    it('refusals at submission: quota 429, unknown field 400, full queue 503 with Retry-After', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await gatewayOn(t, target, {
        IMAGEGATE_TASK_CONCURRENCY: '0',
        IMAGEGATE_TASK_QUEUE_LIMIT: '2',
      });
      const { id, sdk } = await gateway.caller({ imageQuota: 3 });
      const over = await sdk.asyncCall(MODEL_A, messages('x'), { n: 4 });
      assert.equal(over.status_code, 429);
      assert.equal(over.code, 'Throttling.AllocationQuota');
      const invalid = await sdk.asyncCall(MODEL_A, messages('x'), { colour: 'red' });
      assert.equal(invalid.status_code, 400);
      assert.equal(invalid.code, 'InvalidParameter');

      assert.equal((await sdk.asyncCall(MODEL_A, messages('x'))).status_code, 200);
      assert.equal((await sdk.asyncCall(MODEL_A, messages('x'))).status_code, 200);
      const full = await sdk.asyncCall(MODEL_A, messages('x'));
      assert.equal(full.status_code, 503);
      assert.equal(full.code, 'Overloaded');
      assert.equal(full.headers.get('retry-after'), '5');
      assert.equal((await gateway.admission.limits.find(id))?.imagesReserved, 2);
      // The refused submissions have their rows, as refused synchronous requests do.
      const rows = await rowsOf(gateway, id);
      assert.deepEqual(rows.map((row) => row.errorCode).sort(), [
        'InvalidParameter',
        'Overloaded',
        'Throttling.AllocationQuota',
      ]);
    });

    it('a task that reached its upstream cannot be canceled (400) and is not run again', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const { fake, env } = await fakeUpstream(t);
      fake.script({ kind: 'hang' });
      const gateway = await gatewayOn(t, target, env);
      const { id, sdk } = await gateway.caller({ imageQuota: 5 });
      const taskId = String((await sdk.asyncCall(MODEL_A, messages('x'))).output?.task_id);
      await eventually(() => fake.submissions().length === 1);
      assert.equal((await sdk.fetch(taskId)).output?.task_status, 'RUNNING');
      const refused = await sdk.cancel(taskId);
      assert.equal(refused.status_code, 400);
      assert.equal(refused.code, 'UnsupportedOperation');
      assert.match(String(refused.message), /is RUNNING/);

      // Shutting down with no budget left stops it: FAILED, nothing billed, reservation freed.
      await gateway.close();
      const reopened = await gatewayOn(t, target, env);
      const task = await reopened.tasks.store.find(taskId);
      assert.equal(task?.state, 'FAILED');
      assert.equal(task?.errorCode, 'InternalError');
      const standing = await reopened.admission.limits.find(id);
      assert.deepEqual([standing?.imagesUsed, standing?.imagesReserved], [0, 0]);
      assert.equal(fake.submissions().length, 1);
    });

    it('a restart with tasks pending: they run after it, once each, billed once', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const secret = randomBytes(32).toString('base64url');
      const first = await gatewayOn(t, target, {
        IMAGEGATE_SECRET: secret,
        IMAGEGATE_TASK_CONCURRENCY: '0',
      });
      const { id, sdk } = await first.caller({ imageQuota: 10 });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push(String((await sdk.asyncCall(MODEL_B, messages(`x${i}`))).output?.task_id));
      await first.close();

      const second = await gatewayOn(t, target, { IMAGEGATE_SECRET: secret });
      const sdkAgain = new DashScopeSdk(`${second.url}/vendor/api/v1`, sdk.apiKey);
      for (const taskId of ids)
        assert.equal((await sdkAgain.wait(taskId)).output?.task_status, 'SUCCEEDED');
      const rows = await rowsOf(second, id);
      assert.equal(rows.length, 3);
      assert.ok(rows.every((row) => row.status === 200 && row.imagesBilled === 1));
      const standing = await second.admission.limits.find(id);
      assert.deepEqual([standing?.imagesUsed, standing?.imagesReserved], [3, 0]);
    });
  });
}
