import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { openDatabase } from '../../src/store/database/database.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { runInProcess } from './cli-runs.js';
import { DAY, JAN_1, usageRow } from '../helpers/usage-rows.js';

describe('imagegate usage and token limits on the command line', () => {
  let dataDir: string;

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-usage-cli-'));
    const database = await openDatabase({
      kind: 'sqlite',
      file: path.join(dataDir, 'imagegate.db'),
    });
    await new SqlUsageStore(database).insert([
      usageRow(1, { requestId: 'req-1', createdAt: JAN_1 + 10 }),
      usageRow(1, {
        requestId: 'req-2',
        createdAt: JAN_1 + 20,
        model: MODEL_B,
        channel: 'ds, "primary"',
      }),
      usageRow(1, {
        requestId: 'req-3',
        createdAt: JAN_1 + DAY,
        tokenId: 'tok_b',
        account: 'beta',
        status: 429,
        errorCode: 'Throttling.AllocationQuota',
        imagesRequested: 4,
        imagesReported: undefined,
        imagesReceived: 0,
        imagesDelivered: 0,
        imagesBilled: 0,
        costMicros: 0,
      }),
    ]);
    await database.close();
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  const cli = (...args: string[]) => runInProcess({ IMAGEGATE_DATA_DIR: dataDir }, ...args);

  it('lists requests as CSV, filtered, and adds them up by day, model and token', async () => {
    const [all, byModel, byDay, oneToken, window, json, wrong] = await Promise.all([
      cli('usage', '--csv'),
      cli('usage', '--group-by', 'model', '--csv'),
      cli('usage', '--group-by', 'day'),
      cli('usage', '--token', 'tok_b', '--csv'),
      cli(
        'usage',
        '--since',
        '2025-01-02',
        '--until',
        '2025-01-03T00:00:00Z',
        '--account',
        'beta',
        '--json',
      ),
      cli('usage', '--group-by', 'token', '--json'),
      cli('usage', '--group-by', 'week'),
    ]);
    assert.equal(all.code, 0, all.stderr);
    const lines = all.stdout.trimEnd().split('\r\n');
    assert.equal(
      lines[0],
      'time,request_id,token_id,account,model,mode,channel,status,error_code,images_requested,images_reported,images_received,images_delivered,images_billed,output_size,cost,gateway_ms,upstream_ms,queue_ms,storage_ms,replayed,workspace,front_door',
    );
    assert.equal(lines.length, 4);
    assert.equal(
      lines[2],
      `2025-01-01T00:00:00.020Z,req-2,tok_a,acme,${MODEL_B},text-to-image,"ds, ""primary""",200,,1,,1,1,1,1024*1024,0.040000,50,40,,,false,,dashscope`,
    );

    assert.equal(
      byModel.stdout,
      'model,requests,succeeded,failed,images_requested,images_received,images_delivered,images_billed,cost\r\n' +
        `${MODEL_A},2,1,1,5,1,1,1,0.040000\r\n${MODEL_B},1,1,0,1,1,1,1,0.040000\r\n`,
    );
    assert.match(byDay.stdout, /^DAY\s+REQUESTS\s+SUCCEEDED\s+FAILED/);
    assert.match(byDay.stdout, /2025-01-01\s+2\s+2\s+0\s+2\s+2\s+2\s+2\s+0\.080000/);
    assert.match(
      byDay.stdout,
      /total: 3 requests \(2 succeeded, 1 failed\), 2 of 6 images requested delivered, 2 billed, cost 0\.080000/,
    );

    assert.equal(oneToken.stdout.trimEnd().split('\r\n').length, 2);
    assert.match(oneToken.stdout, /req-3,tok_b,beta/);

    const windowed = JSON.parse(window.stdout) as {
      rows: { request_id: string }[];
      totals: { requests: number };
    };
    assert.deepEqual(
      windowed.rows.map((entry) => entry.request_id),
      ['req-3'],
    );
    assert.equal(windowed.totals.requests, 1);

    const grouped = JSON.parse(json.stdout) as {
      group_by: string;
      groups: { token: string; cost: string }[];
    };
    assert.equal(grouped.group_by, 'token');
    assert.deepEqual(
      grouped.groups.map((group) => [group.token, group.cost]),
      [
        ['tok_a', '0.080000'],
        ['tok_b', '0.000000'],
      ],
    );

    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /--group-by: must be one of day, model, token/);
  });

  it('sets limits on token create, changes them with token update, and shows them in token list', async () => {
    const created = await cli(
      'token',
      'create',
      '--name',
      'limited',
      '--account',
      'acme',
      '--image-quota',
      '100',
      '--rpm',
      '60',
      '--concurrency',
      '2',
      '--models',
      MODEL_A,
      '--pending-tasks',
      '20',
      '--upload-mb',
      '512',
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^[\w-]+\.[\w-]+\.[\w-]+\n$/, 'only the token on stdout');
    const id = String(decodeJwt(created.stdout.trim()).jti);

    const updated = await cli(
      'token',
      'update',
      id,
      '--image-quota',
      '250',
      '--rpm',
      'unlimited',
      '--models',
      'all',
      '--expires-in',
      '7d',
      '--upload-files',
      '300',
    );
    assert.equal(updated.code, 0, updated.stderr);
    const shown = JSON.parse(updated.stdout) as {
      expires: string;
      limits: Record<string, unknown>;
    };
    assert.deepEqual(shown.limits, {
      imageQuota: 250,
      imagesUsed: 0,
      imagesReserved: 0,
      requestsPerMinute: null,
      maxConcurrent: 2,
      allowedModels: null,
      maxPendingTasks: 20,
      uploadMbPerWindow: 512,
      uploadFilesPerWindow: 300,
    });
    assert.ok(Math.abs(Date.parse(shown.expires) - Date.now() - 7 * DAY) < 60_000);

    const [listed, table, mistakes] = await Promise.all([
      cli('token', 'list', '--json'),
      cli('token', 'list'),
      Promise.all([
        cli('token', 'update', id),
        cli('token', 'update', id, '--rpm', '0'),
        cli('token', 'update', id, '--models', 'dall-e'),
        cli('token', 'update', 'tok_missing', '--rpm', '5'),
        cli('token', 'update', id, '--no-expiry', '--expires-in', '1d'),
        cli('token', 'create', '--name', 'x', '--image-quota', 'lots'),
        cli('token', 'update', id, '--pending-tasks', 'unlimited'),
      ]),
    ]);
    const entry = (
      JSON.parse(listed.stdout) as { id: string; limits: { imageQuota: number } }[]
    ).find((token) => token.id === id);
    assert.equal(entry?.limits.imageQuota, 250);
    assert.match(table.stdout, new RegExp(`${id}\\s+limited\\s+acme.*0/250\\s+-\\s+2\\s+all`));
    assert.deepEqual(
      mistakes.map((result) => [result.code, result.stdout]),
      mistakes.map(() => [2, '']),
    );
    assert.match(mistakes[0]?.stderr ?? '', /give at least one limit or expiry/);
    assert.match(mistakes[1]?.stderr ?? '', /--rpm must be an integer of at least 1/);
    assert.match(mistakes[2]?.stderr ?? '', /--models must list models among/);
    assert.match(mistakes[3]?.stderr ?? '', /no token with ID tok_missing/);
    assert.match(
      mistakes[4]?.stderr ?? '',
      /give one of --expires-in, --expires-at and --no-expiry/,
    );
    assert.match(mistakes[5]?.stderr ?? '', /--image-quota must be an integer/);
    assert.match(
      mistakes[6]?.stderr ?? '',
      /--pending-tasks must be an integer of at least 1, or "default" for the deployment's setting/,
    );
    const restored = await cli('token', 'update', id, '--pending-tasks', 'default');
    assert.equal(restored.code, 0, restored.stderr);
    assert.equal(
      (JSON.parse(restored.stdout) as { limits: Record<string, unknown> }).limits.maxPendingTasks,
      null,
    );
  });
});
