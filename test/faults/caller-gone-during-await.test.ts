import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import pg from 'pg';
import type { EngineJob } from '../../src/engine/engine.js';
import { STAND_IN_STATUS } from '../../src/domain/usage-row.js';
import { aborted } from '../helpers/aborted.js';
import {
  type BillingGateway,
  eventually,
  gate,
  postGeneration,
  startBillingGateway,
} from '../helpers/billing-gateway.js';
import { postStreaming } from '../helpers/dashscope-sse.js';
import { postgresTarget, TEST_POSTGRES_URL } from '../helpers/postgres.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { connectionsOpen } from '../helpers/server-connections.js';

/**
 * A caller who hangs up while a hook awaits the database (authentication, the limits, an
 * Idempotency-Key claim). The hooks that came after such an await used to add their `close`
 * listeners after the `close` had come: the concurrency slot was then held (and renewed) for the
 * life of the process, the request had no ledger row, and a request whose claim went through was
 * billed for images nobody received, its key never forgotten when it failed. A session of the
 * test's own holds a lock the gateway's statement waits for, and lets go once the caller is gone.
 */
describe('a caller gone while a hook awaits the database', () => {
  async function setUp(t: TestContext) {
    const target = await postgresTarget(t);
    if (target === undefined) return undefined;
    const schema = (target as { schema: string }).schema;
    const gateway = await startBillingGateway({ database: target });
    t.after(() => gateway.close());
    const address = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    const blocker = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await blocker.connect();
    t.after(() => blocker.end());
    return { gateway, port: Number(new URL(address).port), schema, blocker };
  }

  /** Sends a generation request on a raw socket, and hangs up once the gateway waits on a lock. */
  async function hangUpWhileBlocked(
    server: Server,
    port: number,
    blocker: pg.Client,
    headers: Record<string, string>,
    waitingOn: string,
  ): Promise<void> {
    const body = JSON.stringify(modelABody({ n: 2 }));
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(
      `POST ${GENERATION_URL} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
        `${lines.join('')}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await eventually(async () => {
      // Inside the blocker's transaction the activity view would be read once and kept.
      await blocker.query('select pg_stat_clear_snapshot()');
      const { rows } = await blocker.query<{ waiting: number }>(
        `select count(*)::int as waiting from pg_stat_activity
          where wait_event_type = 'Lock' and query like $1 and pid <> pg_backend_pid()`,
        [`%${waitingOn}%`],
      );
      return (rows[0]?.waiting ?? 0) >= 1;
    });
    socket.destroy();
    await connectionsOpen(server, 0);
    await blocker.query('rollback');
  }

  /** Once `count` requests have their own rows (an incremental stream's stand-in is replaced). */
  async function rowsOf(gateway: BillingGateway, tokenId: string, count: number) {
    await eventually(async () => {
      await gateway.admission.ledger.flush();
      const rows = await gateway.admission.usage.list({ tokenId }, 10);
      return rows.length >= count && rows.every((row) => row.status !== STAND_IN_STATUS);
    });
    return gateway.admission.usage.list({ tokenId }, 10);
  }

  it('frees the concurrency slot at once and records the request, when it left during authentication', async (t) => {
    const set = await setUp(t);
    if (set === undefined) return;
    const { gateway, port, schema, blocker } = set;
    const token = await gateway.token({ limits: { maxConcurrent: 1, imageQuota: 100 } });
    await blocker.query('begin');
    await blocker.query(`lock table "${schema}".tokens in access exclusive mode`);
    await hangUpWhileBlocked(
      gateway.app.server,
      port,
      blocker,
      { authorization: token.authorization },
      'tokens',
    );

    const [gone] = await rowsOf(gateway, token.id, 1);
    assert.equal(gone?.status, 499);
    assert.equal(gone?.imagesBilled, 0);
    // Well within the slot's time to live: a slot still held would refuse this with 429.
    const next = await postGeneration(gateway, token.authorization, modelABody());
    assert.equal(next.statusCode, 200, next.body);
  });

  for (const engineFails of [false, true])
    it(`bills nothing and forgets the key, when it left while its Idempotency-Key was claimed (engine ${engineFails ? 'failing' : 'working'})`, async (t) => {
      const set = await setUp(t);
      if (set === undefined) return;
      const { gateway, port, schema, blocker } = set;
      if (engineFails) gateway.engine.failure = new Error('engine down');
      const token = await gateway.token({ limits: { imageQuota: 10 } });
      // An uncommitted row with the same key: the gateway's claim waits for it.
      await blocker.query('begin');
      await blocker.query(
        `insert into "${schema}".idempotency_keys
           (scope, idempotency_key, fingerprint, state, owner, lease_until, request_id, created_at, expires_at)
         values ($1, 'k1', 'x', 'running', 'blocker', 0, 'r', 0, 0)`,
        [token.id],
      );
      await hangUpWhileBlocked(
        gateway.app.server,
        port,
        blocker,
        { authorization: token.authorization, 'idempotency-key': 'k1' },
        'idempotency_keys',
      );

      const [gone] = await rowsOf(gateway, token.id, 1);
      assert.equal(gone?.status, 499);
      assert.equal(gone?.imagesBilled, 0);
      // The reservation held before the abort is freed as the generation unwinds.
      await eventually(async () => {
        const limits = await gateway.admission.limits.find(token.id);
        return limits?.imagesReserved === 0;
      });
      assert.equal((await gateway.admission.limits.find(token.id))?.imagesUsed, 0);
      await eventually(async () => {
        const { rows } = await blocker.query(
          `select 1 from "${schema}".idempotency_keys where scope = $1`,
          [token.id],
        );
        return rows.length === 0;
      });
      gateway.engine.failure = undefined;
      const retry = await postGeneration(gateway, token.authorization, modelABody({ n: 2 }), 'k1');
      assert.equal(retry.statusCode, 200, retry.body);
      assert.equal(retry.headers['idempotent-replayed'], undefined);
    });

  it("bills an incremental stream the images handed over, when it left while an image's bill waited for a lock", async (t) => {
    const set = await setUp(t);
    if (set === undefined) return;
    const { gateway, schema, blocker } = set;
    const baseUrl = `http://127.0.0.1:${set.port}`;
    const token = await gateway.token({ limits: { imageQuota: 4 } });
    const gates = Array.from({ length: 4 }, () => gate());
    let seen: (job: EngineJob) => void = () => undefined;
    const job = new Promise<EngineJob>((resolve) => (seen = resolve));
    gateway.engine.imageGate = async (index, running) => {
      seen(running);
      await Promise.race([gates[index]?.promise, aborted(running.signal)]);
    };
    const pending = postStreaming(
      baseUrl,
      GENERATION_URL,
      { authorization: token.authorization, 'x-dashscope-sse': 'enable' },
      modelABody({ enable_sequential: true, n: 4, incremental_output: true }),
    );
    gates[0]?.open();
    const answer = await pending;
    const requestId = String(answer.headers['x-request-id']);
    await answer.received(`https://images.test/${requestId}/1-0.png`);
    await eventually(async () => (await gateway.admission.limits.find(token.id))?.imagesUsed === 1);
    // The second image is handed over, then its bill waits for the reservation's row.
    await blocker.query('begin');
    await blocker.query(
      `select 1 from "${schema}".quota_reservations where token_id = $1 for update`,
      [token.id],
    );
    gates[1]?.open();
    await eventually(async () => {
      await blocker.query('select pg_stat_clear_snapshot()');
      const { rows } = await blocker.query<{ waiting: number }>(
        `select count(*)::int as waiting from pg_stat_activity
          where wait_event_type = 'Lock' and query like '%quota_reservations%'
            and pid <> pg_backend_pid()`,
      );
      return (rows[0]?.waiting ?? 0) >= 1;
    });
    assert.ok(answer.text().includes(`https://images.test/${requestId}/1-1.png`));
    answer.hangUp();
    await connectionsOpen(gateway.app.server, 0);
    await blocker.query('commit');
    await aborted((await job).signal);

    const [gone] = await rowsOf(gateway, token.id, 1);
    // Handed over, then billed: the caller leaving during the bill does not undo the delivery.
    assert.equal(gone?.status, 499);
    assert.equal(gone?.imagesDelivered, 2);
    assert.equal(gone?.imagesBilled, 2);
    await eventually(
      async () => (await gateway.admission.limits.find(token.id))?.imagesReserved === 0,
    );
    assert.equal((await gateway.admission.limits.find(token.id))?.imagesUsed, 2);
  });
});
