import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Pool } from 'undici';
import { ERROR_TABLE, type ErrorCode } from '../../src/errors/error-table.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { makePng, toDataUrl } from '../inputs/image-fixtures.js';
import {
  type BentCase,
  bentCases,
  type CaseFixtures,
  type PooledCase,
  type SocketCase,
  validCases,
} from './mutations.js';

const SEED = 0x5eed_0009;
const CONCURRENCY = 16;
/** How long a client that promised more bytes than it sends waits for an answer. */
const PATIENCE_MS = 300;
const MIB = 1024 * 1024;
/** Growth allowed across the run for each measure of `process.memoryUsage()`, after GC. */
const MEMORY_BOUNDS = {
  /**
   * 16 MiB over ~3600 cases is under 5 KB a case, less than one request's parsed body and request
   * objects together, so keeping them would fail here. Measured: about 1 MiB (compiled code,
   * bounded caches).
   */
  heapUsed: 16 * MIB,
  /** Buffers outside the heap: request bodies, decoded input images, encoded PNGs. Measured: < 1 MiB. */
  external: 16 * MIB,
  /**
   * Resident memory is the high-water mark of native allocations too (libvips, SQLite, the render
   * workers): freed pages stay with the process, so it rises with however many generations
   * happened to overlap, by up to ~400 MiB on this box. The bound still catches a native leak per
   * generated image: keeping one 1024*1024 canvas (3 MiB) of each of ~300 generations passes it.
   */
  rss: 768 * MIB,
} as const;

type MemoryMeasure = keyof typeof MEMORY_BOUNDS;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function sendPooled(pool: Pool, bent: PooledCase): Promise<Answer> {
  const response = await pool.request({
    path: GENERATION_URL,
    method: 'POST',
    headers: bent.headers,
    body: bent.body,
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (typeof value === 'string') headers[name] = value;
  }
  return { status: response.statusCode, headers, body: await response.body.text() };
}

/** The first answer on a fresh connection; status 0 if none came within the patience allowed. */
function sendOverSocket(port: number, bent: SocketCase): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let settled = false;
    const settle = (answer: Answer | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(patience);
      socket.destroy();
      if (answer === undefined)
        reject(new Error(`connection closed without an answer: ${received.toString('latin1')}`));
      else resolve(answer);
    };
    const patience = setTimeout(
      () => settle({ status: 0, headers: {}, body: '' }),
      bent.mayStayUnanswered ? PATIENCE_MS : 10_000,
    );
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      socket.write(bent.head);
      socket.write(bent.body);
      if (bent.halfClose) socket.end();
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answer = parseAnswer(received);
      if (answer !== undefined) settle(answer);
    });
    socket.on('close', () => settle(parseAnswer(received)));
  });
}

function parseAnswer(bytes: Buffer): Answer | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = bytes.subarray(end + 4);
  if (body.length < length) return undefined;
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: body.subarray(0, length).toString('utf8'),
  };
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_TABLE, code);
}

/** What is wrong with an answer, or undefined when it is a proper one. */
function problemOf(bent: BentCase, answer: Answer): string | undefined {
  if (answer.status === 0)
    return bent.transport === 'socket' && bent.mayStayUnanswered ? undefined : 'no answer';
  if (answer.status >= 500) return `status ${answer.status}`;
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return `status ${answer.status} with a body that is not JSON`;
  }
  if (typeof body !== 'object' || body === null) return 'the body is not a JSON object';
  if (answer.status === 200) {
    return 'output' in body && 'request_id' in body ? undefined : 'a 200 without output';
  }
  if (answer.status < 400 || answer.status >= 500) return `status ${answer.status}`;
  const fields = Object.keys(body).sort().join(',');
  if (fields !== 'code,message,request_id') return `error body with the fields ${fields}`;
  const { code, message, request_id: requestId } = body as Record<string, unknown>;
  if (!isErrorCode(code)) return `code ${String(code)} is not in the error table`;
  if (ERROR_TABLE[code].status !== answer.status)
    return `code ${code} answered with status ${answer.status}`;
  if (typeof message !== 'string' || message === '') return 'an empty message';
  if (requestId !== answer.headers['x-request-id'])
    return 'request_id differs from the X-Request-Id header';
  return undefined;
}

interface Failure {
  bent: BentCase;
  problem: string;
  answer: Answer | undefined;
}

/** The case in full, as a reader needs it to replay it by hand. */
function describeFailure({ bent, problem, answer }: Failure): string {
  const body = bent.body.toString('utf8');
  const shownBody =
    body.length > 20_000 ? `${body.slice(0, 20_000)}… (${body.length} chars)` : body;
  const request =
    bent.transport === 'socket'
      ? `${bent.head}${shownBody}${bent.halfClose ? '\n(then the client half-closed)' : ''}`
      : `POST ${GENERATION_URL}\n${JSON.stringify(bent.headers)}\n${shownBody}`;
  const shownAnswer =
    answer === undefined
      ? '(no answer)'
      : `${answer.status} ${JSON.stringify(answer.headers)}\n${answer.body}`;
  return `--- ${bent.label}: ${problem}\n${request}\n=> ${shownAnswer}`;
}

interface Outcome {
  failures: Failure[];
  /** How many answers had each status; 0 counts the clients that hung up unanswered. */
  statuses: Map<number, number>;
}

/** Sends every case, `CONCURRENCY` at a time, and keeps those answered improperly. */
async function sendAll(pool: Pool, port: number, cases: readonly BentCase[]): Promise<Outcome> {
  const outcome: Outcome = { failures: [], statuses: new Map() };
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < cases.length; index = next++) {
      const bent = cases[index]!;
      try {
        const answer =
          bent.transport === 'pool'
            ? await sendPooled(pool, bent)
            : await sendOverSocket(port, bent);
        outcome.statuses.set(answer.status, (outcome.statuses.get(answer.status) ?? 0) + 1);
        const problem = problemOf(bent, answer);
        if (problem !== undefined) outcome.failures.push({ bent, problem, answer });
      } catch (error) {
        outcome.failures.push({
          bent,
          problem: `transport error: ${String(error)}`,
          answer: undefined,
        });
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return outcome;
}

/** Node's gc(), exposed for this process if the runner did not: measurements after a full collection. */
function garbageCollector(): () => void {
  const exposed: unknown = Reflect.get(globalThis, 'gc');
  if (typeof exposed === 'function') return () => void exposed();
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--no-expose-gc');
  return gc;
}

function settledMemory(gc: () => void): Record<MemoryMeasure, number> {
  for (let round = 0; round < 3; round++) gc();
  const { heapUsed, external, rss } = process.memoryUsage();
  return { heapUsed, external, rss };
}

describe('robustness: bent requests against a running gateway', () => {
  let gateway: TestGateway;
  let pool: Pool;
  let port: number;
  let fixtures: CaseFixtures;
  let cases: BentCase[];
  let warmUp: BentCase[];

  before(async () => {
    gateway = await startTestGateway();
    const address = await gateway.listen();
    port = Number(new URL(address).port);
    pool = new Pool(address, { connections: CONCURRENCY });
    fixtures = {
      authorization: await gateway.bearer(),
      imageDataUrl: toDataUrl(await makePng(256, 256)),
      seed: SEED,
    };
    cases = bentCases(fixtures);
    // Every kind of case, so that code paths are compiled and caches filled before measuring,
    // and enough generations for the native memory pools to reach their usual size.
    const generations = Array.from({ length: 8 }, () => validCases(fixtures)).flat();
    warmUp = [...generations, ...cases.filter((_, index) => index % 10 === 0)];
  });
  after(async () => {
    await pool.close();
    await gateway.close();
  });

  it(
    'answers every bent request with a 4xx error body or a 200, and memory stays flat',
    { timeout: 120_000 },
    async (t) => {
      assert.ok(cases.length >= 2500, `only ${cases.length} cases`);
      const gc = garbageCollector();

      const warmUpOutcome = await sendAll(pool, port, warmUp);
      const before = settledMemory(gc);
      const outcome = await sendAll(pool, port, cases);
      const afterAll = settledMemory(gc);

      const failures = [...warmUpOutcome.failures, ...outcome.failures];
      assert.equal(
        failures.length,
        0,
        `${failures.length} of ${warmUp.length + cases.length} requests were answered improperly; ` +
          `the first ones:\n${failures.slice(0, 5).map(describeFailure).join('\n')}`,
      );
      const statuses = [...outcome.statuses].sort(([a], [b]) => a - b);
      t.diagnostic(`${cases.length} cases, statuses: ${JSON.stringify(statuses)}`);
      // The cases reach every stage: generation, validation, authentication and the body limit.
      for (const status of [200, 400, 401, 413])
        assert.ok(outcome.statuses.has(status), `no case was answered ${status}`);

      for (const measure of Object.keys(MEMORY_BOUNDS) as MemoryMeasure[]) {
        const [from, to] = [before[measure] / MIB, afterAll[measure] / MIB];
        t.diagnostic(`${measure} after GC: ${from.toFixed(1)} -> ${to.toFixed(1)} MiB`);
        assert.ok(
          afterAll[measure] - before[measure] < MEMORY_BOUNDS[measure],
          `${measure} grew by ${(to - from).toFixed(1)} MiB`,
        );
      }

      for (const valid of validCases(fixtures)) {
        const still = await sendPooled(pool, valid);
        assert.equal(still.status, 200, `the gateway still serves ${valid.label}`);
      }
    },
  );
});
