import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { eventually } from '../helpers/waits.js';
import { MODEL_A } from '../../src/domain/models.js';
import {
  type ClientGateway,
  asyncGenerateArgs,
  outputDir,
  pngAt,
  runClient,
  runInTerminal,
  spawnClient,
  startClientGateway,
} from './client-runs.js';

const SAVED = /^(\/\S+\/imagegate-[A-Za-z0-9._-]+-(\d+)\.png)$/gm;
const ESCAPE = '\x1b';

/** A sequential group of up to two; seed 1 makes the local engine produce both for this prompt. */
function sequentialPair(dir: string): string[] {
  return [
    'generate',
    'a lighthouse at dusk',
    '--size',
    '1K',
    '-n',
    '2',
    '--seed',
    '1',
    '--sequential',
    '-o',
    dir,
  ];
}

function savedPaths(stdout: string): string[] {
  return [...stdout.matchAll(SAVED)].map((match) => match[1]!);
}

describe('imagegate generate against a running gateway (local engine)', () => {
  let client: ClientGateway;
  // One gateway for the file: each test's own runs and output directory keep them apart.
  before(async () => {
    client = await startClientGateway();
  });
  after(() => client.gateway.close());

  it('with the defaults saves a PNG of model A at 2K, prints its path and the usage', async (t) => {
    const dir = await outputDir(t);
    const run = await runClient(client.env, 'generate', 'a red fox in the snow', '-o', dir);
    assert.equal(run.code, 0, run.stderr);
    const [file, ...more] = savedPaths(run.stdout);
    assert.deepEqual(more, []);
    assert.deepEqual(await pngAt(file!), { width: 2048, height: 2048 });
    assert.match(run.stdout, /^usage: 1 image, 2048\*2048; request \S+$/m);
    assert.ok(!run.stdout.includes(ESCAPE), 'no escape sequences without a terminal');
  });

  it('-n 2 --sequential streams a group of two and saves both, in order', async (t) => {
    const dir = await outputDir(t);
    const run = await runClient(client.env, ...sequentialPair(dir));
    assert.equal(run.code, 0, run.stderr);
    const files = savedPaths(run.stdout);
    assert.equal(files.length, 2);
    assert.match(files[0]!, /-1\.png$/);
    assert.match(files[1]!, /-2\.png$/);
    for (const file of files) assert.deepEqual(await pngAt(file), { width: 1024, height: 1024 });
    assert.match(run.stdout, /^usage: 2 images, 1024\*1024; request /m);
  });

  it('a local --image goes through the upload protocol, with its --bbox', async (t) => {
    const dir = await outputDir(t);
    const input = path.join(dir, 'input.png');
    await writeFile(
      input,
      await sharp({ create: { width: 640, height: 480, channels: 3, background: '#336699' } })
        .png()
        .toBuffer(),
    );
    const run = await runClient(
      client.env,
      'generate',
      'paint the box red',
      ...['--image', input, '--bbox', '10,10,200,200', '--size', '1K', '-o', dir, '--json'],
    );
    assert.equal(run.code, 0, run.stderr);
    const answer = JSON.parse(run.stdout) as { images: { file: string }[]; request_id: string };
    const { width, height } = await pngAt(answer.images[0]!.file);
    assert.ok(width > height, `the output keeps the input's 4:3 shape, got ${width}x${height}`);
    const uploads = await client.gateway.services.database.db
      .selectFrom('upload_usage')
      .selectAll()
      .execute();
    assert.ok(
      uploads.some((row) => Number(row.files) === 1),
      'the file was counted by the upload route',
    );
  });

  it("an invalid --palette prints the gateway's 400 InvalidParameter and exits 1", async (t) => {
    const dir = await outputDir(t);
    const run = await runClient(
      client.env,
      'generate',
      'a fox',
      ...['--palette', '#112233:40.00%,#445566:50.00%,#778899:5.00%', '-o', dir],
    );
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /^imagegate: InvalidParameter: parameters\.color_palette: .*100\.00%.* \(request \S+\)\n$/,
    );
    assert.equal(run.stdout, '');
  });

  it('--async saves the image of its task, and tasks get shows it SUCCEEDED', async (t) => {
    const dir = await outputDir(t);
    const run = await runClient(client.env, ...asyncGenerateArgs(dir));
    assert.equal(run.code, 0, run.stderr);
    const taskId = /^task (\S+): SUCCEEDED$/m.exec(run.stdout)?.[1];
    assert.ok(taskId !== undefined, run.stdout);
    assert.deepEqual(await pngAt(savedPaths(run.stdout)[0]!), { width: 1024, height: 1024 });
    assert.match(
      run.stdout,
      new RegExp(`^usage: 1 image, 1024\\*1024; request \\S+, task ${taskId}$`, 'm'),
    );
    const shown = await runClient(client.env, 'tasks', 'get', taskId);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^task ${taskId}: SUCCEEDED$`, 'm'));
    assert.match(shown.stdout, /^image 1: http:\/\/\S+\/images\/\S+\.png\?/m);
  });

  it('Ctrl-C during a stream drops it: exit 130, the images so far saved and billed', async (t) => {
    const dir = await outputDir(t);
    // Seed 6 makes the local engine produce a group of 11 for this prompt, 2K each.
    const run = spawnClient(client.env, [
      ...['generate', 'a long group', '-n', '12', '--seed', '6', '--sequential', '-o', dir],
    ]);
    await eventually(() => savedPaths(run.stdout()).length > 0, 30_000, 'the first image saved');
    run.child.kill('SIGINT');
    const ended = await run.ended;
    assert.equal(ended.code, 130, ended.stderr);
    const saved = savedPaths(ended.stdout);
    assert.ok(saved.length < 11, `the stream stopped early, after ${saved.length} images`);
    const requestId = /\/imagegate-([^/]+)-1\.png$/.exec(saved[0]!)![1]!;
    await eventually(
      async () => {
        await client.gateway.admission.ledger.flush();
        const rows = await client.gateway.admission.usage.list({}, 1000);
        return rows.some(
          (row) =>
            row.requestId === requestId &&
            row.errorCode === 'CallerGone' &&
            row.imagesBilled >= saved.length,
        );
      },
      30_000,
      "the stream's ledger row says 499",
    );
  });

  it('--openai saves the image the OpenAI door answers', async (t) => {
    const dir = await outputDir(t);
    const run = await runClient(
      client.env,
      'generate',
      'a fox',
      ...['--openai', '-m', MODEL_A, '--size', '1536*1024', '-o', dir],
    );
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(await pngAt(savedPaths(run.stdout)[0]!), { width: 1536, height: 1024 });
    assert.match(run.stdout, /^usage: 1 image, 1536\*1024; request \S+$/m);
  });

  it('without a token: says how to get one, with the usage, and exits 2', async () => {
    const run = await runClient({ ...client.env, IMAGEGATE_TOKEN: '' }, 'generate', 'a fox');
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^imagegate: no token: set IMAGEGATE_TOKEN or pass --token/);
    assert.match(run.stderr, /imagegate generate "PROMPT"/);
  });

  it('bad flags exit 2 with the usage', async () => {
    const run = await runClient(client.env, 'generate', 'a fox', '--bbox', '1,2,3,4');
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--bbox applies to the --image before it/);
  });

  it('on a terminal, a live progress line per image as the stream delivers it, in order', async (t) => {
    const dir = await outputDir(t);
    const run = await runInTerminal(client.env, ...sequentialPair(dir));
    assert.equal(run.code, 0, run.stdout);
    assert.ok(run.stdout.includes(`${ESCAPE}[2K`), 'the live line is redrawn in place');
    const lines = [...run.stdout.matchAll(/image (\d+): (\/\S+\.png)/g)].map((m) => m[1]);
    assert.deepEqual(lines, ['1', '2']);
    const progress = [...run.stdout.matchAll(/image (\d+): downloading/g)].map((m) => m[1]);
    assert.ok(
      progress.length >= 2 && progress.indexOf('2') > progress.lastIndexOf('1'),
      run.stdout,
    );
    assert.match(run.stdout, /usage: 2 images, 1024\*1024; request /);
  });
});
