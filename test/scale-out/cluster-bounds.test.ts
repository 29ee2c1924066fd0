import assert from 'node:assert/strict';
import { it } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { makeBmp } from '../inputs/image-fixtures.js';
import { uploadCertificate, uploadFile } from '../helpers/sdk-uploads.js';
import { startCluster } from './cluster.js';
import type { GatewayProcess } from './gateway-process.js';

/** 480,054 bytes: two fit in 1 MiB, three do not. */
const SMALL = makeBmp(400, 400);
const SUBMISSION_URL = '/vendor/api/v1/services/aigc/image-generation/generation';

interface Answer {
  /** `200`, or the status and the error code. */
  outcome: string;
  taskId: string | undefined;
}

async function submit(node: GatewayProcess, authorization: string): Promise<Answer> {
  const response = await fetch(`${node.url}${SUBMISSION_URL}`, {
    method: 'POST',
    headers: {
      authorization,
      'content-type': 'application/json',
      'X-DashScope-Async': 'enable',
    },
    body: JSON.stringify({
      model: MODEL_A,
      input: { messages: [{ role: 'user', content: [{ text: 'a lighthouse' }] }] },
    }),
  });
  const body = (await response.json()) as { code?: string; output?: { task_id: string } };
  return {
    outcome: response.status === 200 ? '200' : `${response.status} ${body.code}`,
    taskId: body.output?.task_id,
  };
}

function tally(answers: readonly Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { outcome } of answers) counts[outcome] = (counts[outcome] ?? 0) + 1;
  return counts;
}

it("three gateway nodes on one PostgreSQL hold the task queue's and the uploads' bounds between them", async (t) => {
  // No node runs a task: every accepted submission stays PENDING.
  const cluster = await startCluster(t, {
    IMAGEGATE_TASK_CONCURRENCY: '0',
    IMAGEGATE_TASK_QUEUE_LIMIT: '5',
    IMAGEGATE_UPLOAD_MB_PER_TOKEN: '1',
  });
  if (cluster === undefined) return;
  const { nodes } = cluster;
  const fire = (authorization: string, count: number) =>
    Promise.all(
      Array.from({ length: count }, (_, index) =>
        submit(nodes[index % nodes.length] as GatewayProcess, authorization),
      ),
    );

  // 1. 60 submissions at once, 20 through each node, against a queue of 5.
  const flooder = await cluster.token({ imageQuota: 1000 });
  const flood = await fire(flooder.authorization, 60);
  t.diagnostic(`60 at once against a queue of 5: ${JSON.stringify(tally(flood))}`);
  assert.deepEqual(tally(flood), { '200': 5, '503 Overloaded': 55 });
  for (const { taskId } of flood.filter((answer) => answer.taskId !== undefined)) {
    const canceled = await fetch(`${nodes[0]?.url}/vendor/api/v1/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: { authorization: flooder.authorization },
    });
    assert.equal(canceled.status, 200);
  }

  // 2. A token limited to 2 waiting tasks fills its part; another token still finds the rest.
  const bounded = await cluster.token({ imageQuota: 1000, maxPendingTasks: 2 });
  const boundedAnswers = await fire(bounded.authorization, 30);
  t.diagnostic(`30 at once from a token bounded to 2: ${JSON.stringify(tally(boundedAnswers))}`);
  assert.deepEqual(tally(boundedAnswers), { '200': 2, '429 Throttling.RateQuota': 28 });
  const other = await cluster.token({ imageQuota: 1000 });
  const otherAnswers = await fire(other.authorization, 30);
  t.diagnostic(`30 at once from another token: ${JSON.stringify(tally(otherAnswers))}`);
  assert.deepEqual(tally(otherAnswers), { '200': 3, '503 Overloaded': 27 });

  // 3. Uploads of one token at once, through every node, against its window of 1 MiB.
  const uploader = await cluster.token({});
  const certificates = await Promise.all(
    Array.from({ length: 12 }, (_, index) =>
      uploadCertificate(
        Number(new URL((nodes[index % nodes.length] as GatewayProcess).url).port),
        '/vendor',
        MODEL_B,
        uploader.authorization,
      ),
    ),
  );
  const uploads = await Promise.all(
    certificates.map((certificate, index) => uploadFile(certificate, `${index}.bmp`, SMALL)),
  );
  const outcomes = tally(
    uploads.map((answer) => ({
      outcome:
        answer.status === 200
          ? '200'
          : `${answer.status} ${(JSON.parse(answer.body) as { code: string }).code}`,
      taskId: undefined,
    })),
  );
  t.diagnostic(`12 uploads of 480,054 bytes at once against 1 MiB: ${JSON.stringify(outcomes)}`);
  assert.deepEqual(outcomes, { '200': 2, '429 Throttling.RateQuota': 10 });
});
