import assert from 'node:assert/strict';
import { it } from 'node:test';
import pg from 'pg';
import {
  eventually,
  gate,
  postGeneration,
  startBillingGateway,
} from '../helpers/billing-gateway.js';
import { modelABody } from '../helpers/requests.js';
import { sessionsSettled } from '../helpers/settled-sessions.js';
import { throwawayPostgres } from './throwaway-postgres.js';

/**
 * The database freezes while a request's settlement is on its way (SIGSTOP to a cluster of the
 * test's own). The gateway stops waiting and answers 503, but the statement has reached the
 * server, which commits it once it runs again: the request is billed after all. It used to be
 * answered "nothing was billed"; the answer now says the billing is unconfirmed, and a retry with
 * the same Idempotency-Key gets the billed images without paying twice.
 */
it('answers a settlement the frozen database did not confirm as unconfirmed, and a keyed retry pays once', async (t) => {
  const cluster = await throwawayPostgres(t);
  if (cluster === undefined) return;
  const gateway = await startBillingGateway({
    database: { kind: 'postgres', url: cluster.url, schema: 'frozen_settlement' },
    env: {
      IMAGEGATE_DB_STATEMENT_TIMEOUT_MS: '500',
      IMAGEGATE_DB_ACQUIRE_TIMEOUT_MS: '500',
      IMAGEGATE_DB_LOCK_TIMEOUT_MS: '300',
    },
  });
  t.after(() => gateway.close());
  const token = await gateway.token({ limits: { imageQuota: 10 } });
  const check = new pg.Client({ connectionString: cluster.url });
  // The cluster may be stopped before this client is ended.
  check.on('error', () => undefined);
  // Opened connections, so that the settlement's statement is sent before anything waits.
  for (let i = 0; i < 3; i++)
    assert.equal(
      (await postGeneration(gateway, token.authorization, modelABody())).statusCode,
      200,
    );
  const used = async () => {
    const { rows } = await check.query<{ used: number }>(
      'select images_used::int as used from frozen_settlement.tokens where id = $1',
      [token.id],
    );
    return rows[0]?.used;
  };

  const engine = gate();
  gateway.engine.gate = engine.promise;
  const calls = gateway.engine.calls;
  const answer = postGeneration(gateway, token.authorization, modelABody({ n: 2 }), 'frozen-1');
  await eventually(() => gateway.engine.calls === calls + 1);
  await cluster.freeze();
  engine.open();
  const refused = await answer;
  await cluster.thaw();
  gateway.engine.gate = undefined;

  assert.equal(refused.statusCode, 503, refused.body);
  const { message } = refused.json<{ message: string }>();
  assert.doesNotMatch(message, /nothing was billed/);
  assert.match(message, /did not confirm this request's billing/);
  assert.match(message, /same Idempotency-Key/);

  await check.connect();
  t.after(() => check.end());
  // Whether the thawed server committed the statement the gateway gave up on (a one-statement
  // settlement does; a transaction's connection, dropped by the gateway, is rolled back), the
  // keyed retry leaves the request paid for once: replayed, or generated and billed anew.
  await sessionsSettled(check);
  const before = await used();
  const retry = await postGeneration(
    gateway,
    token.authorization,
    modelABody({ n: 2 }),
    'frozen-1',
  );
  assert.equal(retry.statusCode, 200, retry.body);
  assert.equal(retry.headers['idempotent-replayed'] === 'true', before === 5);
  assert.equal(await used(), 5, 'paid for once');
});
