import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it, type TestContext } from 'node:test';
import { TokenIssuer } from '../../src/auth/token-issuer.js';
import { SqlAdminChangeStore } from '../../src/store/admin-change-store.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { SqlTokenStore } from '../../src/store/token-store.js';
import { loggedChanges } from '../../src/tokens/admin-change-log.js';
import { TokenAdmin } from '../../src/tokens/token-admin.js';
import { BACKENDS, openNodes } from '../helpers/database-backends.js';
import { type Log, silentLog } from '../../src/support/log.js';

/** A TokenAdmin on a fresh SQLite database, logging to `log`, and its change record. */
async function tokenAdminOn(t: TestContext, log: Log) {
  const [, sqlite] = BACKENDS[0]!;
  const [database] = (await openNodes(t, sqlite, 1))!;
  const tokens = new SqlTokenStore(database!.db);
  const history = new SqlAdminChangeStore(database!.db);
  const admin = new TokenAdmin({
    issuer: new TokenIssuer(tokens, randomBytes(32)),
    tokens,
    limits: new SqlTokenLimitsStore(database!.db),
    changes: loggedChanges(log, history),
    history,
    now: Date.now,
  });
  return { admin, history };
}

it('logs one structured line per change, naming the admin, the token and the fields, never the JWT', async (t) => {
  const lines: { fields: object; message: string }[] = [];
  const { admin, history } = await tokenAdminOn(t, {
    info: (fields: object, message: string) => lines.push({ fields, message }),
    warn: () => undefined,
    error: () => undefined,
  });
  const { token, view } = await admin.create('tok_admin', {
    name: 'logged',
    admin: false,
    limits: { imageQuota: 3 },
  });
  const id = String(view.id);
  await admin.update('tok_admin', id, { name: 'renamed', limits: { expiresAt: null } });
  await admin.revoke('tok_admin', id);
  assert.deepEqual(
    lines.map((line) => line.fields),
    [
      {
        admin_change: {
          actor: 'tok_admin',
          action: 'create',
          token: id,
          fields: ['name', 'limits.image_quota'],
        },
      },
      {
        admin_change: {
          actor: 'tok_admin',
          action: 'update',
          token: id,
          fields: ['name', 'expires_at'],
        },
      },
      { admin_change: { actor: 'tok_admin', action: 'revoke', token: id, fields: ['revoked_at'] } },
    ],
  );
  assert.ok(!JSON.stringify(lines).includes(token));
  assert.equal((await history.list(id, 10)).length, 3);
});

it('shows an external token what is known of it at /me: its id, account and limits, no name or times', async (t) => {
  const { admin } = await tokenAdminOn(t, silentLog);
  const view = await admin.viewOf({
    tokenId: 'ext:abc',
    account: 'ext:issuer/alice',
    admin: false,
    issuer: 'external',
  });
  assert.deepEqual(
    [view.id, view.name, view.account, view.created_at, view.limits.rpm, view.images_used],
    ['ext:abc', null, 'ext:issuer/alice', null, null, 0],
  );
});
