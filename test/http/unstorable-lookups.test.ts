import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BACKENDS } from '../helpers/database-backends.js';
import { startTestGateway } from '../helpers/test-gateway.js';

/**
 * Lookups by values no row can hold: a U+0000 (or another control character) in a task id or a
 * filter. PostgreSQL refuses U+0000 in the statement itself, which was answered 500; SQLite
 * looked and found nothing. Both now answer as for any other id or filter that matches nothing,
 * or refuse the filter by name, before the database is asked.
 */
for (const [backend, targetFor] of BACKENDS) {
  describe(`lookups by values no row can hold (${backend})`, () => {
    it('answers 404 for such a task id, and 400 naming such a list or usage filter', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const gateway = await startTestGateway({ database: target });
      t.after(() => gateway.close());
      const caller = await gateway.bearer();
      const admin = await gateway.bearer({ admin: true });
      const call = (method: 'GET' | 'POST', url: string, authorization = caller) =>
        gateway.app.inject({ method, url, headers: { authorization } });

      for (const [method, url] of [
        ['GET', '/api/v1/tasks/a%00b'],
        ['GET', '/api/v1/tasks/%01'],
        ['POST', '/api/v1/tasks/%00/cancel'],
      ] as const) {
        const answer = await call(method, url);
        assert.equal(answer.statusCode, 404, `${method} ${url}: ${answer.body}`);
        assert.equal(answer.json<{ code: string }>().code, 'NotFound');
      }

      for (const [url, field, authorization] of [
        ['/api/v1/tasks?model_name=%00', 'model_name', caller],
        ['/api/v1/tasks?api_key_id=tok_%00', 'api_key_id', caller],
        ['/admin/usage?token=%00', 'token', admin],
        ['/admin/usage?account=acme%00', 'account', admin],
      ] as const) {
        const answer = await call('GET', url, authorization);
        assert.equal(answer.statusCode, 400, `${url}: ${answer.body}`);
        const body = answer.json<{ code: string; message: string }>();
        assert.equal(body.code, 'InvalidParameter');
        assert.match(body.message, new RegExp(`^${field}: must not hold a control character`));
      }

      // The same lookups with plain values still answer.
      assert.equal((await call('GET', '/api/v1/tasks?model_name=x')).statusCode, 200);
      assert.equal((await call('GET', '/admin/usage?account=acme', admin)).statusCode, 200);
      assert.equal((await call('GET', '/api/v1/tasks/no-such-task')).statusCode, 404);
    });
  });
}
