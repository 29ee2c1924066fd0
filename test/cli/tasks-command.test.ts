import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../helpers/waits.js';
import {
  type ClientGateway,
  asyncGenerateArgs,
  outputDir,
  pngAt,
  runClient,
  spawnClient,
  startClientGateway,
  taskState,
} from './client-runs.js';

const PENDING_LINE = /^task (\S+): PENDING$/m;

describe('imagegate tasks, and Ctrl-C during generate --async', () => {
  let client: ClientGateway;
  // This gateway runs no task (another node would): what it takes stays PENDING.
  before(async () => {
    client = await startClientGateway({ IMAGEGATE_TASK_CONCURRENCY: '0' });
  });
  after(() => client.gateway.close());

  it('Ctrl-C while its task is pending cancels the task and exits 130', async (t) => {
    const dir = await outputDir(t);
    const run = spawnClient(client.env, asyncGenerateArgs(dir));
    await eventually(() => PENDING_LINE.test(run.stdout()), 30_000, 'the task is shown PENDING');
    const taskId = PENDING_LINE.exec(run.stdout())![1]!;
    run.child.kill('SIGINT');
    const ended = await run.ended;
    assert.equal(ended.code, 130, ended.stderr);
    assert.match(ended.stderr, new RegExp(`interrupted: task ${taskId} canceled`));
    assert.equal(await taskState(client, taskId), 'CANCELED');
  });

  it('tasks cancel cancels a pending task; tasks list and get show it', async (t) => {
    const dir = await outputDir(t);
    const run = spawnClient(client.env, asyncGenerateArgs(dir));
    await eventually(() => PENDING_LINE.test(run.stdout()), 30_000, 'the task is shown PENDING');
    const taskId = PENDING_LINE.exec(run.stdout())![1]!;
    const listed = await runClient(client.env, 'tasks', 'list', '--status', 'PENDING');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${taskId}\\s+PENDING\\s+gen-2\\.7-image-pro\\s`, 'm'));
    const canceled = await runClient(client.env, 'tasks', 'cancel', taskId);
    assert.equal(canceled.code, 0, canceled.stderr);
    assert.equal(canceled.stdout, `task ${taskId}: CANCELED\n`);
    // The waiting generate sees its task end CANCELED and says so.
    const ended = await run.ended;
    assert.equal(ended.code, 1);
    assert.match(ended.stdout, new RegExp(`^task ${taskId}: CANCELED$`, 'm'));
    const shown = await runClient(client.env, 'tasks', 'get', taskId, '--json');
    assert.equal(
      (JSON.parse(shown.stdout) as { output: { task_status: string } }).output.task_status,
      'CANCELED',
    );
  });

  it("tasks cancel of an unknown task prints the gateway's NotFound and exits 1", async () => {
    const run = await runClient(client.env, 'tasks', 'cancel', 'no-such-task');
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^imagegate: NotFound: .* \(request \S+\)\n$/);
  });

  it('a missing action or task id exits 2 with the usage', async () => {
    const run = await runClient(client.env, 'tasks', 'get');
    assert.equal(run.code, 2);
    assert.match(run.stderr, /tasks get: give exactly one task ID/);
    assert.match(run.stderr, /imagegate tasks list/);
  });
});

describe('imagegate tasks get -o DIR', () => {
  let client: ClientGateway;
  before(async () => {
    client = await startClientGateway();
  });
  after(() => client.gateway.close());

  it("saves a finished task's images into DIR and prints their paths", async (t) => {
    const generated = await runClient(client.env, ...asyncGenerateArgs(await outputDir(t)));
    assert.equal(generated.code, 0, generated.stderr);
    const taskId = /^task (\S+): /m.exec(generated.stdout)![1]!;
    // A directory that does not exist yet is made, as generate -o makes one.
    const dir = path.join(await outputDir(t), 'saved');
    const shown = await runClient(client.env, 'tasks', 'get', taskId, '-o', dir);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^task ${taskId}: SUCCEEDED$`, 'm'));
    const file = path.join(dir, `imagegate-${taskId}-1.png`);
    assert.match(
      shown.stdout,
      new RegExp(`^image 1: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'),
    );
    assert.deepEqual(await pngAt(file), { width: 1024, height: 1024 });
    const both = await runClient(client.env, 'tasks', 'get', taskId, '-o', dir, '--json');
    assert.equal(both.code, 2);
    assert.match(both.stderr, /tasks get: -o saves the images, --json prints the answer/);
  });
});
