import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, SignJWT } from 'jose';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Posts an empty JSON object: 400 "model: is required" proves authentication passed. */
async function postWith(gateway: TestGateway, authorization: string | undefined, payload = '{}') {
  return gateway.app.inject({
    method: 'POST',
    url: GENERATION_URL,
    headers: {
      'content-type': 'application/json',
      ...(authorization === undefined ? {} : { authorization }),
    },
    payload,
  });
}

function assertUnauthorized(
  response: { statusCode: number; json(): { code: string; message: string } },
  message: RegExp,
) {
  assert.equal(response.statusCode, 401);
  assert.equal(response.json().code, 'InvalidApiKey');
  assert.match(response.json().message, message);
}

function assertAuthenticated(response: { statusCode: number; body: string }) {
  assert.equal(response.statusCode, 400, response.body);
  assert.match(response.body, /model: is required/);
}

describe('gateway-issued tokens', () => {
  let gateway: TestGateway;
  let clock = Date.now();

  before(async () => {
    gateway = await startTestGateway({ now: () => clock });
  });
  after(() => gateway.close());

  const sign = (
    claims: Record<string, unknown>,
    key: Uint8Array = gateway.services.keys.tokenSigning,
  ) => new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(key);

  it('accepts a token the gateway issued', async () => {
    assertAuthenticated(await postWith(gateway, await gateway.bearer()));
  });

  it('accepts the scheme name in any case', async () => {
    const token = (await gateway.bearer()).slice('Bearer '.length);
    assertAuthenticated(await postWith(gateway, `bearer ${token}`));
  });

  it('rejects a missing, non-Bearer or malformed Authorization header', async () => {
    assertUnauthorized(await postWith(gateway, undefined), /missing/);
    assertUnauthorized(await postWith(gateway, 'Basic dXNlcjpwYXNz'), /Bearer <token>/);
    assertUnauthorized(await postWith(gateway, 'Bearer'), /Bearer <token>/);
    assertUnauthorized(await postWith(gateway, 'Bearer not-a-jwt'), /well-formed/);
  });

  it('checks the token before reading the body', async () => {
    assertUnauthorized(await postWith(gateway, undefined, '{not json'), /missing/);
  });

  it('rejects a wrong signature', async () => {
    const token = await sign({ sub: 'a', jti: 'tok_x' }, new Uint8Array(32).fill(7));
    assertUnauthorized(await postWith(gateway, `Bearer ${token}`), /signature is invalid/);
  });

  it('rejects alg none, even with valid-looking claims', async () => {
    const { record } = await gateway.services.tokenIssuer.issue({
      name: 'n',
      account: 'a',
      admin: false,
      expiresInSeconds: undefined,
    });
    const unsigned = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ sub: 'a', jti: record.id })}.`;
    assertUnauthorized(
      await postWith(gateway, `Bearer ${unsigned}`),
      /algorithm "none" is not accepted/,
    );
  });

  it('rejects an RS256 token when no external keys are configured', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const token = await new SignJWT({ sub: 'a' })
      .setProtectedHeader({ alg: 'RS256' })
      .sign(privateKey);
    assertUnauthorized(
      await postWith(gateway, `Bearer ${token}`),
      /algorithm "RS256" is not accepted/,
    );
  });

  it('rejects a validly signed token that names no stored token', async () => {
    const token = await sign({ sub: 'a', jti: 'tok_unknown' });
    assertUnauthorized(await postWith(gateway, `Bearer ${token}`), /not known/);
  });

  it('rejects a validly signed token without jti or sub', async () => {
    assertUnauthorized(await postWith(gateway, `Bearer ${await sign({ sub: 'a' })}`), /jti or sub/);
  });

  it('rejects an expired token, and one whose stored expiry has passed', async () => {
    const authorization = await gateway.bearer({ expiresInSeconds: 60 });
    assertAuthenticated(await postWith(gateway, authorization));
    clock += 120_000;
    try {
      assertUnauthorized(await postWith(gateway, authorization), /expired/);
    } finally {
      clock -= 120_000;
    }
  });

  it('rejects a token that is not yet valid', async () => {
    const { record } = await gateway.services.tokenIssuer.issue({
      name: 'n',
      account: 'a',
      admin: false,
      expiresInSeconds: undefined,
    });
    const token = await new SignJWT({ sub: 'a', jti: record.id })
      .setProtectedHeader({ alg: 'HS256' })
      .setNotBefore(Math.floor(clock / 1000) + 3600)
      .sign(gateway.services.keys.tokenSigning);
    assertUnauthorized(await postWith(gateway, `Bearer ${token}`), /not yet valid/);
  });

  it('rejects a revoked token', async () => {
    const { token, record } = await gateway.services.tokenIssuer.issue({
      name: 'n',
      account: 'a',
      admin: false,
      expiresInSeconds: undefined,
    });
    assertAuthenticated(await postWith(gateway, `Bearer ${token}`));
    assert.equal(await gateway.services.tokenStore.revoke(record.id, clock), true);
    assertUnauthorized(await postWith(gateway, `Bearer ${token}`), /revoked/);
  });
});

describe('external tokens (RS256/ES256 keys and a JWKS URL)', () => {
  let gateway: TestGateway;
  let jwksServer: Server;
  let keyDir: string;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwksKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  before(async () => {
    const jwk = { ...(await exportJWK(jwksKey.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jwksServer = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    const { port } = jwksServer.address() as AddressInfo;
    keyDir = await mkdtemp(path.join(tmpdir(), 'imagegate-keys-'));
    const rsaFile = path.join(keyDir, 'rsa.pem');
    const ecFile = path.join(keyDir, 'ec.pem');
    await writeFile(rsaFile, rsa.publicKey.export({ type: 'spki', format: 'pem' }));
    await writeFile(ecFile, ec.publicKey.export({ type: 'spki', format: 'pem' }));
    gateway = await startTestGateway({
      env: {
        IMAGEGATE_JWT_PUBLIC_KEYS: `${rsaFile},${ecFile}`,
        IMAGEGATE_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`,
        IMAGEGATE_JWT_ISSUER: 'https://issuer.example',
      },
    });
  });
  after(async () => {
    await gateway.close();
    jwksServer.close();
    await rm(keyDir, { recursive: true, force: true });
  });

  const external = (
    alg: 'RS256' | 'ES256',
    key: KeyObject,
    claims: Record<string, unknown> = {},
    kid?: string,
  ) =>
    new SignJWT({ sub: 'partner-account', iss: 'https://issuer.example', ...claims })
      .setProtectedHeader({ alg, ...(kid === undefined ? {} : { kid }) })
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(key);

  it('accepts RS256 and ES256 tokens under the configured PEM keys', async () => {
    assertAuthenticated(
      await postWith(gateway, `Bearer ${await external('RS256', rsa.privateKey)}`),
    );
    assertAuthenticated(
      await postWith(gateway, `Bearer ${await external('ES256', ec.privateKey)}`),
    );
  });

  it('accepts a token signed by a key from the JWKS URL', async () => {
    assertAuthenticated(
      await postWith(gateway, `Bearer ${await external('ES256', jwksKey.privateKey, {}, 'k1')}`),
    );
  });

  it('rejects an external token signed by an unknown key', async () => {
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
    assertUnauthorized(
      await postWith(gateway, `Bearer ${await external('RS256', stranger.privateKey)}`),
      /signature|key/,
    );
  });

  it('rejects an external token with the wrong issuer', async () => {
    const token = await external('RS256', rsa.privateKey, { iss: 'https://other.example' });
    assertUnauthorized(await postWith(gateway, `Bearer ${token}`), /iss/);
  });

  it('rejects an expired external token', async () => {
    const token = await new SignJWT({ sub: 'p', iss: 'https://issuer.example' })
      .setProtectedHeader({ alg: 'RS256' })
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(rsa.privateKey);
    assertUnauthorized(await postWith(gateway, `Bearer ${token}`), /expired/);
  });

  it('rejects algorithm confusion: HS256 signed with a configured public key as the secret', async () => {
    const pem = rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string;
    const token = await new SignJWT({ sub: 'p', jti: 'tok_x' })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(pem));
    assertUnauthorized(await postWith(gateway, `Bearer ${token}`), /signature is invalid/);
  });
});
