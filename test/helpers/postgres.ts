import { randomBytes } from 'node:crypto';
import { after, type TestContext } from 'node:test';
import pg from 'pg';
import type { DatabaseTarget } from '../../src/store/database/database.js';

export const TEST_POSTGRES_URL =
  process.env.IMAGEGATE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** True when the run must not skip service-backed tests (set by .ci/run). */
export const SERVICES_REQUIRED = process.env.IMAGEGATE_REQUIRE_SERVICES === '1';

async function reachable(): Promise<string | undefined> {
  const client = new pg.Client({
    connectionString: TEST_POSTGRES_URL,
    connectionTimeoutMillis: 2000,
  });
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A PostgreSQL target in a schema of its own, dropped when the test ends. When PostgreSQL is not
 * reachable the test is skipped with a message saying so, or fails if services are required.
 */
export async function postgresTarget(t: TestContext): Promise<DatabaseTarget | undefined> {
  const problem = await reachable();
  if (problem !== undefined) {
    if (SERVICES_REQUIRED)
      throw new Error(
        `PostgreSQL is required (IMAGEGATE_REQUIRE_SERVICES=1) but ${TEST_POSTGRES_URL} is not reachable: ${problem}`,
      );
    t.skip(`SKIPPED: PostgreSQL not reachable at ${TEST_POSTGRES_URL} (${problem})`);
    return undefined;
  }
  const schema = `test_${randomBytes(6).toString('hex')}`;
  schemasToDrop.add(schema);
  return { kind: 'postgres', url: TEST_POSTGRES_URL, schema };
}

/**
 * Schemas made by this test file, dropped once all its tests and their own clean-ups are done:
 * a test's `t.after` hooks run in the order they were registered, so dropping there would pull
 * the schema from under gateways that the same test closes later.
 */
const schemasToDrop = new Set<string>();
after(async () => {
  if (schemasToDrop.size === 0) return;
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await client.connect();
  try {
    for (const schema of schemasToDrop)
      await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
});
