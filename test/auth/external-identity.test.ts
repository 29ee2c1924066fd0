import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { MODEL_B } from '../../src/domain/models.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import {
  type BillingGateway,
  postGeneration,
  startBillingGateway,
} from '../helpers/billing-gateway.js';
import { postgresTarget } from '../helpers/postgres.js';
import { modelABody } from '../helpers/requests.js';

const ISSUER = 'https://issuer.example';
const partner = generateKeyPairSync('ec', { namedCurve: 'P-256' });

/** A gateway that trusts the partner's key, on `database` (SQLite when absent). */
async function partnerGateway(database?: DatabaseTarget): Promise<BillingGateway> {
  const keyDir = await mkdtemp(path.join(tmpdir(), 'imagegate-external-'));
  const keyFile = path.join(keyDir, 'partner.pem');
  await writeFile(keyFile, partner.publicKey.export({ type: 'spki', format: 'pem' }));
  const gateway = await startBillingGateway({
    env: { IMAGEGATE_JWT_PUBLIC_KEYS: keyFile },
    ...(database === undefined ? {} : { database }),
  });
  return {
    ...gateway,
    close: async () => {
      await gateway.close();
      await rm(keyDir, { recursive: true, force: true });
    },
  };
}

/** The Authorization header of an external token with `claims`, signed by the partner. */
async function external(claims: Record<string, unknown>): Promise<string> {
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(partner.privateKey);
  return `Bearer ${token}`;
}

function postTo(gateway: BillingGateway, authorization: string, key?: string) {
  return postGeneration(gateway, authorization, modelABody(), key);
}

/**
 * Claims whose identity the database cannot hold are refused with 401 naming the claim, before
 * the engine is called; at the limits exactly, the identity is recorded.
 */
async function refusesUnrecordableIdentities(gateway: BillingGateway): Promise<void> {
  // `ext:` + ISSUER + `:` take this much of the account's 200 characters.
  const room = 200 - `ext:${ISSUER}:`.length;
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ iss: ISSUER, sub: 'nul\u0000inside' }, /sub claim holds a control character/],
    [{ iss: ISSUER, sub: 'tab\tinside' }, /sub claim holds a control character/],
    [{ iss: `${ISSUER}\u007f`, sub: 'p' }, /iss claim holds a control character/],
    [{ iss: ISSUER, sub: 'p', jti: 'line\nbreak' }, /jti claim holds a control character/],
    // Stored as U+FFFD, such an identity would no longer match its own rows (an Idempotency-Key's
    // claim, a task's owner): the request was answered 503 LeaseLost, and its retry replayed
    // images that were never billed.
    [{ iss: ISSUER, sub: 'd\ud800' }, /sub claim holds a lone surrogate/],
    [{ iss: `${ISSUER}\udc00`, sub: 'p' }, /iss claim holds a lone surrogate/],
    [{ iss: ISSUER, sub: 'p', jti: '\ud800' }, /jti claim holds a lone surrogate/],
    [
      { iss: ISSUER, sub: 's'.repeat(room + 1) },
      /iss and sub claims .* longer than 200 characters/,
    ],
    [{ iss: ISSUER, sub: 'p', jti: 'j'.repeat(61) }, /jti claim is longer than 60 characters/],
  ];
  const calls = gateway.engine.calls;
  for (const [claims, message] of cases) {
    const response = await postTo(gateway, await external(claims));
    assert.equal(response.statusCode, 401, JSON.stringify(claims));
    const body = response.json<{ code: string; message: string }>();
    assert.equal(body.code, 'InvalidApiKey');
    assert.match(body.message, message);
  }
  assert.equal(gateway.engine.calls, calls, 'no request reached the engine');
  // A surrogate pair is one character, as the database counts them.
  const longest = 's'.repeat(room - 2) + '\u{1F600}\u{1F600}';
  const response = await postTo(
    gateway,
    await external({ iss: ISSUER, sub: longest, jti: 'j'.repeat(60) }),
  );
  assert.equal(response.statusCode, 200, response.body);
  const rows = await gateway.admission.usage.list({ account: `ext:${ISSUER}:${longest}` }, 10);
  assert.equal(rows.length, 1);
  assert.equal(rows[0]?.tokenId, `ext:${'j'.repeat(60)}`);
  assert.equal(rows[0]?.imagesBilled, 1);
}

describe('external tokens keep apart from gateway tokens and accounts', () => {
  let gateway: BillingGateway;

  before(async () => {
    gateway = await partnerGateway();
  });
  after(() => gateway.close());

  const post = (authorization: string, key?: string) => postTo(gateway, authorization, key);

  it('is neither limited nor billed as the gateway token its jti names, nor as the account its sub names', async () => {
    const victim = await gateway.token({
      account: 'acme',
      limits: { allowedModels: [MODEL_B], imageQuota: 1 },
    });
    const borrowed = await external({ iss: ISSUER, sub: 'acme', jti: victim.id });

    const response = await post(borrowed);
    assert.equal(response.statusCode, 200, response.body);

    const standing = await gateway.admission.limits.find(victim.id);
    assert.equal(standing?.imagesUsed, 0);
    assert.equal(standing?.imagesReserved, 0);
    assert.deepEqual(await gateway.admission.usage.list({ tokenId: victim.id }, 10), []);
    assert.deepEqual(await gateway.admission.usage.list({ account: 'acme' }, 10), []);
    const rows = await gateway.admission.usage.list({ account: `ext:${ISSUER}:acme` }, 10);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.tokenId, `ext:${victim.id}`);
    assert.equal(rows[0]?.imagesBilled, 1);
  });

  it("never replays a gateway token's Idempotency-Key result to an external token", async () => {
    const owner = await gateway.token({ account: 'acme' });
    const first = await post(owner.authorization, 'shared-key');
    assert.equal(first.statusCode, 200, first.body);
    const calls = gateway.engine.calls;

    const repeat = await post(
      await external({ iss: ISSUER, sub: 'acme', jti: owner.id }),
      'shared-key',
    );
    assert.equal(repeat.statusCode, 200, repeat.body);
    assert.equal(repeat.headers['idempotent-replayed'], undefined);
    assert.equal(gateway.engine.calls, calls + 1);
  });

  it('is not refused because a gateway token with its jti as id was revoked', async () => {
    const revoked = await gateway.token({ account: 'acme' });
    assert.equal(await gateway.services.tokenStore.revoke(revoked.id, Date.now()), true);
    const response = await post(await external({ iss: ISSUER, sub: 'p', jti: revoked.id }));
    assert.equal(response.statusCode, 200, response.body);
  });

  it('is refused once its own id, ext:<jti>, is registered as revoked', async () => {
    await gateway.services.tokenStore.insert({
      id: 'ext:partner-token-7',
      name: 'revoked external token',
      account: `ext:${ISSUER}:p`,
      createdAt: Date.now(),
      expiresAt: undefined,
      revokedAt: Date.now(),
      admin: false,
    });
    const response = await post(await external({ iss: ISSUER, sub: 'p', jti: 'partner-token-7' }));
    assert.equal(response.statusCode, 401);
    assert.match(response.json<{ message: string }>().message, /revoked/);
  });

  it('names an account without iss as ext::<sub>, and keys without jti per that account', async () => {
    const response = await post(await external({ sub: 'walk-in' }));
    assert.equal(response.statusCode, 200, response.body);
    const rows = await gateway.admission.usage.list({ account: 'ext::walk-in' }, 10);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.tokenId, undefined);
  });

  it('refuses, before anything is spent, an external token whose claims name an identity that cannot be recorded', () =>
    refusesUnrecordableIdentities(gateway));

  it('issues no gateway token under an account the database cannot hold', async () => {
    for (const [account, message] of [
      ['a'.repeat(201), /^account: must be at most 200 characters/],
      ['tab\there', /^account: must not hold a control character/],
      ['half\ud800pair', /^account: must not hold a lone surrogate/],
    ] as const) {
      await assert.rejects(
        gateway.services.tokenIssuer.issue({
          name: 'odd',
          account,
          admin: false,
          expiresInSeconds: undefined,
        }),
        (error: unknown) =>
          error instanceof GatewayError &&
          error.code === 'InvalidParameter' &&
          message.test(error.message),
      );
    }
    const longest = await gateway.services.tokenIssuer.issue({
      name: 'longest',
      account: 'a'.repeat(200),
      admin: false,
      expiresInSeconds: undefined,
    });
    assert.equal(longest.record.account, 'a'.repeat(200));
  });

  it('issues no gateway token under an account name kept for external tokens', async () => {
    await assert.rejects(
      gateway.services.tokenIssuer.issue({
        name: 'impostor',
        account: `ext:${ISSUER}:acme`,
        admin: false,
        expiresInSeconds: undefined,
      }),
      (error: unknown) =>
        error instanceof GatewayError &&
        error.code === 'InvalidParameter' &&
        /^account: /.test(error.message),
    );
  });
});

it('refuses, on PostgreSQL, an external identity its columns cannot hold, rather than failing the settlement', async (t) => {
  const target = await postgresTarget(t);
  if (target === undefined) return;
  const gateway = await partnerGateway(target);
  t.after(() => gateway.close());
  await refusesUnrecordableIdentities(gateway);
});
