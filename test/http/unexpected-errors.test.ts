import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Principal } from '../../src/domain/principal.js';
import { buildApp } from '../../src/http/app.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';

const principal: Principal = {
  tokenId: 'tok_test',
  account: 'acct',
  admin: false,
  issuer: 'gateway',
};

describe('failures inside the gateway', () => {
  const app = buildApp({
    config: { routePrefix: '/vendor', maxBodyBytes: 4096, logLevel: 'silent' },
    authenticator: { verifyAuthorization: async () => principal },
    generation: {
      generate: async () => {
        throw new Error('database password is hunter2 at /srv/secret/path');
      },
      generateUnbilled: async () => {
        throw new Error('database password is hunter2 at /srv/secret/path');
      },
    },
    ledger: { record: () => undefined },
    checkReady: async () => undefined,
    version: 'test',
  });
  let port = 0;

  before(async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  after(() => app.close());

  it('answers an unexpected exception with 500 InternalError that leaks nothing', async () => {
    const response = await app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: { authorization: 'Bearer x', 'content-type': 'application/json' },
      payload: modelABody(),
    });
    assert.equal(response.statusCode, 500);
    const body = response.json();
    assert.equal(body.code, 'InternalError');
    assert.equal(body.request_id, response.headers['x-request-id']);
    assert.doesNotMatch(response.body, /hunter2|\/srv|at /);
  });

  it('answers 413 while streaming a chunked body that has no Content-Length', async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>(
      (resolve, reject) => {
        const outgoing = request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: GENERATION_URL,
            headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
          },
          (response) => {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (text += chunk));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
          },
        );
        outgoing.on('error', reject);
        // No Content-Length: Node sends the body chunked, so only streaming can catch it.
        for (let i = 0; i < 8; i++) outgoing.write(`${' '.repeat(1024)}`);
        outgoing.end('{}');
      },
    );
    assert.equal(status, 413);
    assert.equal(JSON.parse(body).code, 'RequestTooLarge');
  });
});
