import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { deriveKeys } from '../../src/auth/keys.js';
import { TokenIssuer } from '../../src/auth/token-issuer.js';
import { MODEL_A } from '../../src/domain/models.js';
import type { TokenLimitChanges } from '../../src/domain/token-limits.js';
import type { UsageRow } from '../../src/domain/usage-row.js';
import {
  type Database,
  type DatabaseTarget,
  openDatabase,
} from '../../src/store/database/database.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { SqlTokenStore } from '../../src/store/token-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import type { FakeDashScope } from '../fixtures/fake-dashscope.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { eventually } from '../helpers/waits.js';
import { type GatewayProcess, startGatewayProcess } from '../scale-out/gateway-process.js';

/** A token's quota counters as the database holds them. */
export interface Standing {
  used: number;
  reserved: number;
}

/** A token's counters and ledger rows, read from the gateway's database. */
export interface Books {
  token(limits?: TokenLimitChanges): Promise<{ id: string; authorization: string }>;
  standing(tokenId: string): Promise<Standing>;
  rows(tokenId: string): Promise<UsageRow[]>;
}

/**
 * The test's own view of the database that gateway processes share: it issues tokens (with the
 * secret the nodes are given) and reads counters and ledger rows, to check them exactly against
 * what callers got.
 */
export interface SharedBooks extends Books {
  database: Database;
  secret: string;
}

/** Opens (and migrates) the database as a deployment step would, before any node starts. */
export async function openBooks(t: TestContext, target: DatabaseTarget): Promise<SharedBooks> {
  const database = await openDatabase(target);
  t.after(() => database.close());
  const secret = randomBytes(32).toString('base64url');
  return {
    database,
    secret,
    ...booksOf(
      new TokenIssuer(new SqlTokenStore(database.db), deriveKeys(secret).tokenSigning),
      new SqlTokenLimitsStore(database.db),
      new SqlUsageStore(database),
    ),
  };
}

/** Books over the stores of one database handle. */
export function booksOf(
  issuer: TokenIssuer,
  limits: SqlTokenLimitsStore,
  usage: SqlUsageStore,
): Books {
  return {
    token: async (changes = {}) => {
      const { token, record } = await issuer.issue({
        name: 'faults',
        account: 'fault-co',
        admin: false,
        expiresInSeconds: undefined,
      });
      await limits.update(record.id, changes);
      return { id: record.id, authorization: `Bearer ${token}` };
    },
    standing: async (tokenId) => {
      const found = await limits.find(tokenId);
      if (found === undefined) throw new Error(`no token ${tokenId}`);
      return { used: found.imagesUsed, reserved: found.imagesReserved };
    },
    rows: (tokenId) => usage.list({ tokenId }, 10_000),
  };
}

/** The URL a gateway node is given for a PostgreSQL target: its schema, and a name to find it by. */
export function nodeDatabaseUrl(
  target: { url: string; schema?: string | undefined },
  applicationName?: string,
): string {
  const url = new URL(target.url);
  if (target.schema !== undefined)
    url.searchParams.set('options', `-c search_path=${target.schema}`);
  if (applicationName !== undefined) url.searchParams.set('application_name', applicationName);
  return url.toString();
}

/** The settings every node of a fault test runs with; `env` adds or overrides. */
export function nodeEnv(books: SharedBooks, env: Record<string, string>): Record<string, string> {
  return {
    IMAGEGATE_SECRET: books.secret,
    IMAGEGATE_LEDGER_FLUSH_MS: '50',
    IMAGEGATE_TOKEN_CACHE_MS: '0',
    IMAGEGATE_LOG_LEVEL: 'warn',
    ...env,
  };
}

/** A gateway process that also keeps what it logs (pino, on stdout) after it started. */
export interface FaultNode extends GatewayProcess {
  logs(): string;
  alive(): boolean;
}

/**
 * Starts `count` gateway processes, each with a data directory of its own. When the test ends,
 * every one still running is resumed (it may be stopped) and killed, and its directory removed.
 */
export async function startNodes(
  t: TestContext,
  count: number,
  env: Record<string, string>,
): Promise<FaultNode[]> {
  const dataDirs = await Promise.all(
    Array.from({ length: count }, () => mkdtemp(path.join(tmpdir(), 'imagegate-fault-node-'))),
  );
  const nodes: FaultNode[] = [];
  t.after(async () => {
    for (const node of nodes) {
      if (node.child.exitCode !== null || node.child.signalCode !== null) continue;
      node.child.kill('SIGCONT');
      node.child.kill('SIGKILL');
      await node.exited;
    }
    await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  await Promise.all(
    dataDirs.map(async (dataDir) => {
      const node = await startGatewayProcess({ ...env, IMAGEGATE_DATA_DIR: dataDir });
      let logs = '';
      node.child.stdout?.on('data', (chunk: Buffer) => {
        logs += chunk.toString();
      });
      nodes.push({
        ...node,
        logs: () => logs,
        alive: () => node.child.exitCode === null && node.child.signalCode === null,
      });
    }),
  );
  return nodes;
}

/**
 * One data directory for gateway processes started one after another on it, as a restart after a
 * kill does. When the test ends, every one still running is killed and the directory removed.
 */
export async function restartableNode(
  t: TestContext,
): Promise<{ directory: string; start(env: Record<string, string>): Promise<GatewayProcess> }> {
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-restarted-node-'));
  const processes: GatewayProcess[] = [];
  t.after(async () => {
    for (const node of processes) {
      if (node.child.exitCode !== null || node.child.signalCode !== null) continue;
      node.child.kill('SIGKILL');
      await node.exited;
    }
    await rm(directory, { recursive: true, force: true });
  });
  return {
    directory,
    start: async (env) => {
      const node = await startGatewayProcess({ ...env, IMAGEGATE_DATA_DIR: directory });
      processes.push(node);
      return node;
    },
  };
}

/** A config file naming one DashScope channel on the fake; the env that points a gateway at it. */
export async function dashScopeChannelEnv(
  t: TestContext,
  fake: FakeDashScope,
  channel: { passThroughUrls?: boolean } = {},
): Promise<Record<string, string>> {
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-fault-config-'));
  t.after(() => rm(directory, { recursive: true, force: true }));
  const file = path.join(directory, 'gateway.yaml');
  await writeFile(
    file,
    [
      'channels:',
      '  - name: fake-dashscope',
      '    type: dashscope',
      `    base_url: ${fake.url}`,
      '    api_key_env: FAULT_DASHSCOPE_KEY',
      ...(channel.passThroughUrls === true ? ['    pass_through_urls: true'] : []),
    ].join('\n'),
  );
  return { IMAGEGATE_CONFIG: file, FAULT_DASHSCOPE_KEY: fake.apiKey };
}

export function generationBody(model: string, n: number, prompt = 'a lighthouse at dusk') {
  return {
    model,
    input: { messages: [{ role: 'user', content: [{ text: prompt }] }] },
    parameters: { n },
  };
}

/** What a caller saw: a status (or why there was none), the images it got, and how long it took. */
export interface Outcome {
  requestId: string;
  status: number | 'timed out' | 'connection lost';
  code: string | undefined;
  imageUrls: string[];
  /** The request_id in the body; a replay names the request that generated. */
  bodyRequestId: string | undefined;
  headers: Headers | undefined;
  ms: number;
}

interface ResponseBody {
  code?: string;
  request_id?: string;
  output?: { choices?: { message?: { content?: { image?: string }[] } }[] };
}

/** POSTs one generation, giving up after `timeoutMs` as an impatient client would. */
export async function generate(
  baseUrl: string,
  request: {
    authorization: string;
    body: object;
    requestId: string;
    idempotencyKey?: string;
    timeoutMs?: number;
  },
): Promise<Outcome> {
  const started = Date.now();
  const outcome = (fields: Partial<Outcome> & Pick<Outcome, 'status'>): Outcome => ({
    requestId: request.requestId,
    code: undefined,
    imageUrls: [],
    bodyRequestId: undefined,
    headers: undefined,
    ms: Date.now() - started,
    ...fields,
  });
  try {
    const response = await fetch(`${baseUrl}${GENERATION_URL}`, {
      method: 'POST',
      headers: {
        authorization: request.authorization,
        'content-type': 'application/json',
        'x-request-id': request.requestId,
        ...(request.idempotencyKey === undefined
          ? {}
          : { 'idempotency-key': request.idempotencyKey }),
      },
      body: JSON.stringify(request.body),
      signal: AbortSignal.timeout(request.timeoutMs ?? 30_000),
    });
    const json = (await response.json()) as ResponseBody;
    const imageUrls = (json.output?.choices?.[0]?.message?.content ?? []).flatMap((item) =>
      item.image === undefined ? [] : [item.image],
    );
    return outcome({
      status: response.status,
      code: json.code,
      imageUrls,
      bodyRequestId: json.request_id,
      headers: response.headers,
    });
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
    return outcome({ status: timedOut ? 'timed out' : 'connection lost' });
  }
}

/** GETs a health route within `timeoutMs`; resolves with the status, body and time taken. */
export async function probe(
  baseUrl: string,
  route: '/readyz' | '/healthz',
  timeoutMs = 10_000,
): Promise<{ status: number | 'timed out'; body: string; ms: number }> {
  const started = Date.now();
  try {
    const response = await fetch(`${baseUrl}${route}`, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: response.status, body: await response.text(), ms: Date.now() - started };
  } catch {
    return { status: 'timed out', body: '', ms: Date.now() - started };
  }
}

export { eventually };

export const billedIn = (rows: readonly UsageRow[]) =>
  rows.reduce((total, row) => total + row.imagesBilled, 0);

export const deliveredIn = (outcomes: readonly Outcome[]) =>
  outcomes.reduce(
    (total, outcome) => total + (outcome.status === 200 ? outcome.imageUrls.length : 0),
    0,
  );

/** Requests for `images` images each through a set of nodes, every answer kept for the books. */
export class Traffic {
  readonly outcomes: Outcome[] = [];

  constructor(
    private readonly fake: FakeDashScope,
    private readonly authorization: string,
    private readonly images = 2,
  ) {}

  /** `perNode` concurrent requests on each node; request ids are `<name>-<node>-<index>`. */
  async round(
    name: string,
    nodes: readonly { url: string }[],
    perNode: number,
    timeoutMs?: number,
  ): Promise<Outcome[]> {
    const answers = await Promise.all(
      nodes.flatMap((node, nodeIndex) =>
        Array.from({ length: perNode }, (_, index) => {
          // A request refused before the upstream leaves its behaviour to the next one: all alike.
          this.fake.script({ kind: 'succeed', images: this.images, imageCount: this.images });
          return generate(node.url, {
            authorization: this.authorization,
            body: generationBody(MODEL_A, this.images),
            requestId: `${name}-${nodeIndex}-${index}`,
            ...(timeoutMs === undefined ? {} : { timeoutMs }),
          });
        }),
      ),
    );
    this.outcomes.push(...answers);
    return answers;
  }
}

/**
 * The ledger against what callers got, exactly: at most one row per request, each with the
 * status, code and images its caller saw, billed only when answered 200; the token's used counter
 * equals the images billed and delivered; nothing reserved. `mayLackRow` names the requests that
 * may have no row (refused before authentication finished, so with no one to bill).
 */
export async function checkBooks(
  books: Books,
  tokenId: string,
  outcomes: readonly Outcome[],
  mayLackRow: (outcome: Outcome) => boolean,
): Promise<{ rows: UsageRow[]; unrecorded: Outcome[] }> {
  const rows = await books.rows(tokenId);
  const byRequest = new Map(rows.map((row) => [row.requestId, row]));
  assert.equal(byRequest.size, rows.length, 'no request has two rows');
  const asked = new Set(outcomes.map((outcome) => outcome.requestId));
  for (const row of rows) assert.ok(asked.has(row.requestId), `${row.requestId} was asked`);
  const unrecorded: Outcome[] = [];
  for (const outcome of outcomes) {
    const row = byRequest.get(outcome.requestId);
    if (row === undefined) {
      assert.ok(mayLackRow(outcome), `${outcome.requestId} (${outcome.status}) has no ledger row`);
      unrecorded.push(outcome);
      continue;
    }
    const what = `${outcome.requestId}'s row`;
    assert.equal(row.status, outcome.status, what);
    assert.equal(row.errorCode, outcome.code, what);
    assert.equal(row.imagesDelivered, outcome.imageUrls.length, what);
    assert.equal(row.imagesBilled, outcome.imageUrls.length, what);
  }
  const delivered = deliveredIn(outcomes);
  assert.equal(billedIn(rows), delivered, 'billed in the ledger = delivered to callers');
  assert.deepEqual(await books.standing(tokenId), { used: delivered, reserved: 0 });
  return { rows, unrecorded };
}

/**
 * The end of a fault test on processes: once every reservation has been settled, released or
 * reclaimed (a dead connection may leave one to lapse, within a few leases), the nodes stop
 * gracefully, writing their buffered ledger rows; then the books must balance exactly.
 */
export async function settleStopAndCheck(
  books: Books,
  tokenId: string,
  nodes: readonly FaultNode[],
  outcomes: readonly Outcome[],
  reservationTtlMs: number,
  mayLackRow: (outcome: Outcome) => boolean,
): Promise<{ rows: UsageRow[]; unrecorded: Outcome[] }> {
  await eventually(
    async () => (await books.standing(tokenId)).reserved === 0,
    4 * reservationTtlMs,
    'nothing stays reserved',
  );
  await stopGracefully(nodes);
  return checkBooks(books, tokenId, outcomes, mayLackRow);
}

/** SIGTERM: each node finishes its requests and writes its buffered ledger rows, then exits 0. */
export async function stopGracefully(nodes: readonly FaultNode[]): Promise<void> {
  for (const node of nodes) node.child.kill('SIGTERM');
  assert.deepEqual(
    await Promise.all(nodes.map((node) => node.exited)),
    nodes.map(() => 0),
    'every node exits 0 after SIGTERM',
  );
}
