import assert from 'node:assert/strict';
import path from 'node:path';
import { it } from 'node:test';
import { decodeJwt } from 'jose';
import { openDatabase } from '../../src/store/database/database.js';
import { SqlAdminChangeStore } from '../../src/store/admin-change-store.js';
import { runInProcess } from './cli-runs.js';
import { temporaryDirectory } from '../helpers/temporary-directory.js';

it('records the changes the CLI makes, as the admin API does, with `cli` as the actor', async (t) => {
  const dataDir = await temporaryDirectory('imagegate-cli-changes-');
  const cli = (...args: string[]) => runInProcess({ IMAGEGATE_DATA_DIR: dataDir }, ...args);
  const created = await cli('token', 'create', '--name', 'tracked', '--rpm', '5');
  assert.equal(created.code, 0, created.stderr);
  const id = String(decodeJwt(created.stdout.trim()).jti);
  assert.equal((await cli('token', 'update', id, '--rpm', 'unlimited')).code, 0);
  assert.equal((await cli('token', 'revoke', id)).code, 0);

  const database = await openDatabase({ kind: 'sqlite', file: path.join(dataDir, 'imagegate.db') });
  t.after(() => database.close());
  const changes = await new SqlAdminChangeStore(database.db).list(id, 10);
  assert.deepEqual(
    changes.map(({ actor, action, fields }) => ({ actor, action, fields })),
    [
      { actor: 'cli', action: 'revoke', fields: ['revoked_at'] },
      { actor: 'cli', action: 'update', fields: ['limits.rpm'] },
      { actor: 'cli', action: 'create', fields: ['name', 'limits.rpm'] },
    ],
  );
});
