import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { postgresTarget } from '../helpers/postgres.js';
import { startTestGateway } from '../helpers/test-gateway.js';

type TargetFactory = (t: TestContext) => Promise<DatabaseTarget | undefined>;

const backends: [string, TargetFactory][] = [
  ['SQLite', async () => undefined],
  ['PostgreSQL', postgresTarget],
];

for (const [backend, targetFor] of backends) {
  describe(`tokens on ${backend}`, () => {
    async function open(t: TestContext) {
      const database = await targetFor(t);
      if (backend === 'PostgreSQL' && database === undefined) return undefined;
      const gateway = await startTestGateway(database === undefined ? {} : { database });
      t.after(() => gateway.close());
      return gateway;
    }

    it('stores issued tokens with name, account, creation, expiry and flags, and lists them in creation order', async (t) => {
      const gateway = await open(t);
      if (gateway === undefined) return;
      const issuer = gateway.services.tokenIssuer;
      const first = await issuer.issue({
        name: 'ci',
        account: 'acme',
        admin: true,
        expiresInSeconds: 3600,
      });
      const second = await issuer.issue({
        name: 'app',
        account: 'beta',
        admin: false,
        expiresInSeconds: undefined,
      });
      const found = await gateway.services.tokenStore.find(first.record.id);
      assert.deepEqual(found, first.record);
      assert.equal(found?.admin, true);
      assert.equal(found?.expiresAt, first.record.createdAt + 3_600_000);
      const listed = await gateway.services.tokenStore.list();
      assert.deepEqual(
        listed.map((token) => token.id),
        [first.record.id, second.record.id],
      );
      assert.equal(await gateway.services.tokenStore.find('tok_missing'), undefined);
    });

    it('revokes once, keeps the first revocation time, and reports unknown ids', async (t) => {
      const gateway = await open(t);
      if (gateway === undefined) return;
      const { record } = await gateway.services.tokenIssuer.issue({
        name: 'x',
        account: 'a',
        admin: false,
        expiresInSeconds: undefined,
      });
      assert.equal(await gateway.services.tokenStore.revoke(record.id, 1000), true);
      assert.equal(await gateway.services.tokenStore.revoke(record.id, 2000), true);
      assert.equal((await gateway.services.tokenStore.find(record.id))?.revokedAt, 1000);
      assert.equal(await gateway.services.tokenStore.revoke('tok_missing', 1000), false);
    });

    it('authenticates with a stored token and refuses it once revoked', async (t) => {
      const gateway = await open(t);
      if (gateway === undefined) return;
      const { token, record } = await gateway.services.tokenIssuer.issue({
        name: 'x',
        account: 'a',
        admin: false,
        expiresInSeconds: undefined,
      });
      const post = () =>
        gateway.app.inject({
          method: 'POST',
          url: GENERATION_URL,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          payload: '{}',
        });
      assert.equal((await post()).statusCode, 400);
      await gateway.services.tokenStore.revoke(record.id, Date.now());
      const refused = await post();
      assert.equal(refused.statusCode, 401);
      assert.match(refused.json().message, /revoked/);
    });

    it('reports the database in /readyz', async (t) => {
      const gateway = await open(t);
      if (gateway === undefined) return;
      const ready = await gateway.app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 200);
      await gateway.services.database.close();
      const down = await gateway.app.inject({ url: '/readyz' });
      assert.equal(down.statusCode, 503);
      assert.equal(down.json().status, 'unavailable');
      assert.equal(down.json().reason, 'database not reachable');
    });
  });
}
