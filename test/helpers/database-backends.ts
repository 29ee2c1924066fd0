import path from 'node:path';
import type { TestContext } from 'node:test';
import {
  type Database,
  type DatabaseTarget,
  openDatabase,
} from '../../src/store/database/database.js';
import { SqlTokenStore } from '../../src/store/token-store.js';
import { postgresTarget } from './postgres.js';
import { temporaryDirectory } from './temporary-directory.js';

type TargetFactory = (t: TestContext) => Promise<DatabaseTarget | undefined>;

async function sqliteTarget(): Promise<DatabaseTarget> {
  const directory = await temporaryDirectory('imagegate-store-');
  return { kind: 'sqlite', file: path.join(directory, 'imagegate.db') };
}

/** Both databases: every store test runs against each, through the same code. */
export const BACKENDS: [string, TargetFactory][] = [
  ['SQLite', sqliteTarget],
  ['PostgreSQL', postgresTarget],
];

/**
 * `count` handles on one fresh database, as `count` nodes would hold; undefined when the backend
 * is skipped. Closed when the test ends.
 */
export async function openNodes(
  t: TestContext,
  targetFor: TargetFactory,
  count: number,
): Promise<Database[] | undefined> {
  const target = await targetFor(t);
  if (target === undefined) return undefined;
  // SQLite serves one node: its connection is synchronous, so a second connection in the same
  // process would block the event loop waiting for the first one's lock. Its "nodes" share one
  // connection, whose transactions still interleave between awaits.
  const connections = target.kind === 'sqlite' ? 1 : count;
  const opened: Database[] = [];
  for (let i = 0; i < connections; i++) opened.push(await openDatabase(target));
  t.after(() => Promise.all(opened.map((node) => node.close())));
  return Array.from({ length: count }, (_, index) => opened[index % connections] as Database);
}

/** Inserts a token row and returns its id. */
export async function insertToken(database: Database, account = 'acme'): Promise<string> {
  const id = `tok_${Math.random().toString(36).slice(2)}`;
  await new SqlTokenStore(database.db).insert({
    id,
    name: 'store-test',
    account,
    createdAt: Date.now(),
    expiresAt: undefined,
    revokedAt: undefined,
    admin: false,
  });
  return id;
}
