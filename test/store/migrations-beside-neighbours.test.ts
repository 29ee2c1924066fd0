import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../src/store/database/database.js';
import { postgresTarget, TEST_POSTGRES_URL } from '../helpers/postgres.js';

const NEIGHBOURS = 40;
const OPENINGS = 6;

test('PostgreSQL migrations succeed while neighbouring schemas are being dropped', async (t) => {
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  const targets = [];
  for (let i = 0; i < OPENINGS; i++) {
    const target = await postgresTarget(t);
    if (target === undefined) return;
    targets.push(target);
  }
  await admin.connect();
  const prefix = `neighbour_${randomBytes(4).toString('hex')}`;
  const neighbours = Array.from({ length: NEIGHBOURS }, (_, i) => `${prefix}_${i}`);
  for (const schema of neighbours)
    await admin.query(
      `create schema "${schema}"; create table "${schema}".kysely_migration (name text); create table "${schema}".t (a int, b text)`,
    );
  t.after(async () => {
    for (const schema of neighbours) await admin.query(`drop schema if exists "${schema}" cascade`);
    await admin.end();
  });

  // Another application's schemas vanish while each of our nodes opens and migrates its own.
  let dropping = true;
  const dropper = (async () => {
    for (const schema of neighbours) {
      if (!dropping) break;
      await admin.query(`drop schema "${schema}" cascade`);
    }
  })();
  const opened = await Promise.allSettled(targets.map((target) => openDatabase(target)));
  dropping = false;
  await dropper;

  for (const result of opened) {
    assert.equal(result.status, 'fulfilled', String((result as PromiseRejectedResult).reason));
    const database = result.value;
    // The neighbours' own kysely_migration tables were not mistaken for ours.
    const tokens = await database.db.selectFrom('tokens').select('id').execute();
    assert.deepEqual(tokens, []);
    await database.close();
  }
});
