// The floor under any gateway that bills an answer before handing it over (docs/admission.md):
// the bare Fastify proxy (bench/proxy-bare-fastify.ts) that, once the upstream has answered,
// commits the bill (a token's counter and one ledger row of 17 of the gateway's 24 columns) in SQLite and
// only then replies. Bills of one turn of the event loop share one transaction, as the gateway's
// group commit does (docs/decisions/0003-group-commit-per-turn.md). No auth, no validation, no
// reservation: what lies between this row and the bare Fastify proxy is the cost of committing a
// bill per answer; what lies above it is the gateway's own. Run in a process of its own with the
// upstream's URL as its argument; prints `{"port":N}` once it listens.
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { SYNC_PATH } from '../src/channels/dashscope/dashscope-protocol.js';

const directory = mkdtempSync(path.join(tmpdir(), 'bare-billing-'));
const database = new Database(path.join(directory, 'bills.db'));
database.pragma('journal_mode = WAL');
database.pragma('synchronous = NORMAL');
database.exec(`
  create table tokens (id text primary key, images_used integer not null);
  create table ledger (
    id text primary key, request_id text not null, token_id text not null, account text not null,
    model text not null, mode text not null, channel text not null, status integer not null,
    images_requested integer not null, images_received integer not null,
    images_delivered integer not null, images_billed integer not null, output_size text not null,
    cost_micros integer not null, gateway_ms integer not null, upstream_ms integer not null,
    created_at integer not null);
  insert into tokens values ('tok_bench', 0);`);
const billToken = database.prepare('update tokens set images_used = images_used + ? where id = ?');
const writeRow = database.prepare(
  'insert into ledger values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
);

interface Bill {
  images: number;
  receivedAt: number;
  upstreamMs: number;
  settled: () => void;
}

let waiting: Bill[] = [];
const commitTurn = database.transaction((bills: readonly Bill[]) => {
  const now = Date.now();
  for (const bill of bills) {
    billToken.run(bill.images, 'tok_bench');
    writeRow.run(
      randomUUID(),
      randomUUID(),
      'tok_bench',
      'bench',
      'txt-image-2.0-pro',
      'text-to-image',
      'bench',
      200,
      bill.images,
      bill.images,
      bill.images,
      bill.images,
      '1024*1024',
      0,
      now - bill.receivedAt,
      bill.upstreamMs,
      bill.receivedAt,
    );
  }
});

/** Commits the bills of this turn together, then lets each answer go. */
function billed(images: number, receivedAt: number, upstreamMs: number): Promise<void> {
  return new Promise((settled) => {
    if (waiting.length === 0)
      setImmediate(() => {
        const bills = waiting;
        waiting = [];
        try {
          commitTurn(bills);
        } finally {
          // A failed commit is the bench's own fault; its answers still go, so nothing hangs.
          for (const bill of bills) bill.settled();
        }
      });
    waiting.push({ images, receivedAt, upstreamMs, settled });
  });
}

const upstream = new Pool(process.argv[2] ?? 'http://127.0.0.1:1', { connections: 1024 });
const app = Fastify({ logger: false, keepAliveTimeout: 60_000 });

app.post(SYNC_PATH, async (request, reply) => {
  const receivedAt = Date.now();
  const answer = await upstream.request({
    path: SYNC_PATH,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify(request.body),
  });
  const body = (await answer.body.json()) as { usage?: { image_count?: number } };
  await billed(body.usage?.image_count ?? 1, receivedAt, Date.now() - receivedAt);
  return reply.code(answer.statusCode).send(body);
});

// The same backlog as the gateway and the other references (see bench/proxy-bare-node.ts).
await app.listen({ port: 0, host: '127.0.0.1', backlog: 4096 });
process.stdout.write(`${JSON.stringify({ port: (app.server.address() as AddressInfo).port })}\n`);
process.on('SIGTERM', () => {
  database.close();
  rmSync(directory, { recursive: true, force: true });
  process.exit(0);
});
