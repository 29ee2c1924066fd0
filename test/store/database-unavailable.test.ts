import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { isDatabaseUnavailable } from '../../src/store/database/database-unavailable.js';

function withCode(code: string, message = 'x'): Error {
  return Object.assign(new Error(message), { code });
}

describe('telling a database outage from a bad query', () => {
  it('counts connection failures, shutdowns and our own time-outs as unavailable', () => {
    for (const code of ['57P01', '57P03', '08006', '08001', '53300', '57014', '55P03', '25P03'])
      assert.equal(isDatabaseUnavailable(withCode(code)), true, code);
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'SQLITE_BUSY'])
      assert.equal(isDatabaseUnavailable(withCode(code)), true, code);
    assert.equal(isDatabaseUnavailable(new Error('Connection terminated unexpectedly')), true);
    assert.equal(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect')), true);
  });

  it('leaves bugs and bad queries alone: they stay 500s', () => {
    for (const code of ['42P01', '23505', '22P02', 'SQLITE_ERROR'])
      assert.equal(isDatabaseUnavailable(withCode(code)), false, code);
    assert.equal(isDatabaseUnavailable(new TypeError('x is undefined')), false);
    assert.equal(isDatabaseUnavailable('not an error'), false);
  });

  it('recognises what node-postgres really throws when nothing listens', async () => {
    const client = new pg.Client({
      host: '127.0.0.1',
      port: 1,
      connectionTimeoutMillis: 1000,
    });
    const error = await client.connect().then(
      () => undefined,
      (failure: unknown) => failure,
    );
    assert.ok(error !== undefined);
    assert.equal(isDatabaseUnavailable(error), true, String(error));
  });
});
