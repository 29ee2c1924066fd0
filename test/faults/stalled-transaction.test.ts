import assert from 'node:assert/strict';
import { it } from 'node:test';
import pg from 'pg';
import { MODEL_A } from '../../src/domain/models.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { eventually, generate, generationBody } from './fault-rig.js';
import { BACKENDS, startServingGateway } from './serving-gateway.js';

/** As the gateway sets on its own sessions (IMAGEGATE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS). */
const IDLE_IN_TRANSACTION_MS = 3000;

it('a node frozen inside a transaction holding a token row: others wait at most the lock time-out, answer 503 Overloaded, and recover once the server ends the frozen session (PostgreSQL)', async (t) => {
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const postgres = BACKENDS.find(([name]) => name === 'PostgreSQL')?.[1];
  assert.ok(postgres !== undefined);
  const serving = await startServingGateway(t, postgres, fake, { passThroughUrls: true });
  if (serving === undefined || serving.postgres === undefined) return;
  const schema = serving.postgres.schema as string;
  const quota = await serving.books.token({ imageQuota: 10 });
  const unlimited = await serving.books.token();

  // A session that behaves like a gateway node paused (SIGSTOP) in the middle of a settlement:
  // it holds the token's row lock and then says nothing.
  const frozen = new pg.Client({
    connectionString: serving.postgres.url,
    options: `-c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`,
  });
  await frozen.connect();
  frozen.on('error', () => undefined);
  let frozenEnded = false;
  frozen.on('end', () => {
    frozenEnded = true;
  });
  t.after(() => frozen.end().catch(() => undefined));
  await frozen.query('begin');
  await frozen.query(`update "${schema}".tokens set images_used = images_used + 5 where id = $1`, [
    quota.id,
  ]);

  const blocked = await generate(serving.url, {
    authorization: quota.authorization,
    body: generationBody(MODEL_A, 1),
    requestId: 'behind-the-frozen-lock',
  });
  assert.equal(blocked.status, 503, JSON.stringify(blocked));
  assert.equal(blocked.code, 'Overloaded');
  assert.ok(blocked.headers?.get('retry-after'));
  assert.ok(blocked.ms < 4000, `answered in ${blocked.ms} ms, bounded by the lock time-out`);

  const elsewhere = await generate(serving.url, {
    authorization: unlimited.authorization,
    body: generationBody(MODEL_A, 1),
    requestId: 'another-token',
  });
  assert.equal(elsewhere.status, 200, 'a token without limits never waits on that lock');
  assert.ok(elsewhere.ms < 2000, `${elsewhere.ms} ms`);

  // The server ends the frozen session; its transaction rolls back and the lock is free.
  await eventually(
    () => frozenEnded,
    IDLE_IN_TRANSACTION_MS + 10_000,
    'the server ending the frozen session',
  );
  const after = await generate(serving.url, {
    authorization: quota.authorization,
    body: generationBody(MODEL_A, 1),
    requestId: 'after-the-thaw',
  });
  assert.equal(after.status, 200, JSON.stringify(after));
  assert.deepEqual(
    await serving.books.standing(quota.id),
    { used: 1, reserved: 0 },
    "the frozen session's update was rolled back; only the delivered image is billed",
  );
  const rows = await serving.books.rows(quota.id);
  assert.deepEqual(rows.map((row) => [row.requestId, row.status, row.imagesBilled]).sort(), [
    ['after-the-thaw', 200, 1],
    ['behind-the-frozen-lock', 503, 0],
  ]);
});
