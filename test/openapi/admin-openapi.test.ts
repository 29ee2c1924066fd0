import assert from 'node:assert/strict';
import { it } from 'node:test';
import { startTestGateway } from '../helpers/test-gateway.js';

type Document = {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, { properties: Record<string, unknown> }> };
};

const ADMIN_ROUTES: [string, string][] = [
  ['POST', '/admin/tokens'],
  ['GET', '/admin/tokens'],
  ['GET', '/admin/tokens/{id}'],
  ['PATCH', '/admin/tokens/{id}'],
  ['POST', '/admin/tokens/{id}/revoke'],
  ['GET', '/admin/changes'],
  ['GET', '/me'],
  ['GET', '/me/usage'],
  ['GET', '/admin/usage'],
];

it('/openapi.json documents every admin and /me route, and TokenView as the routes answer it', async (t) => {
  const gateway = await startTestGateway();
  t.after(() => gateway.close());
  const document = (await gateway.app.inject({ url: '/openapi.json' })).json() as Document;
  for (const [method, path] of ADMIN_ROUTES) {
    assert.ok(document.paths[path]?.[method.toLowerCase()], `${method} ${path} is documented`);
    const url = path.replace('{id}', ':id');
    assert.ok(gateway.app.hasRoute({ method, url }), `${method} ${path} is served`);
  }
  const admin = await gateway.bearer({ admin: true });
  const created = (
    await gateway.app.inject({
      method: 'POST',
      url: '/admin/tokens',
      headers: { authorization: admin, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'documented' }),
    })
  ).json() as { record: { limits: object } };
  const schemas = document.components.schemas;
  assert.deepEqual(Object.keys(created.record), Object.keys(schemas.TokenView!.properties));
  assert.deepEqual(
    Object.keys(created.record.limits),
    Object.keys(schemas.TokenLimits!.properties),
  );
});
