import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { NO_SLOT } from '../../src/admission/admission.js';
import { MemoryRateLimiter } from '../../src/admission/memory-rate-limiter.js';
import { TokenAdmission } from '../../src/admission/token-admission.js';
import { TokenVerifier } from '../../src/auth/token-verifier.js';
import { NO_LIMITS, type TokenLimits } from '../../src/domain/token-limits.js';
import type { TokenRecord } from '../../src/store/token-store.js';
import { silentLog } from '../../src/support/log.js';
import { TtlCache } from '../../src/support/ttl-cache.js';
import { acceptingQuota } from '../helpers/accepting-quota.js';

// The hot path answers a caller it has seen at once, without a promise; these tests hold it to
// exactly the decisions the asynchronous path makes.

const KEY = new TextEncoder().encode('a signing key of thirty-two bytes!!');
const NO_EXTERNAL_KEYS = {
  publicKeys: [],
  jwks: undefined,
  issuer: undefined,
  audience: undefined,
};

async function gatewayToken(jti: string): Promise<string> {
  return new SignJWT({ jti, sub: 'acct' }).setProtectedHeader({ alg: 'HS256' }).sign(KEY);
}

function record(id: string, changes: Partial<TokenRecord> = {}): TokenRecord {
  return {
    id,
    name: id,
    account: 'acct',
    createdAt: 0,
    expiresAt: undefined,
    revokedAt: undefined,
    admin: false,
    ...changes,
  };
}

function verifierOver(rows: Map<string, TokenRecord>, clock: { now: number }) {
  const now = () => clock.now;
  const tokens = new TtlCache({ find: async (id: string) => rows.get(id) }, 1000, now);
  return new TokenVerifier(KEY, tokens, NO_EXTERNAL_KEYS, now);
}

describe('a remembered caller is verified at once', () => {
  it('answers a promise the first time, the same principal without one after', async () => {
    const clock = { now: 10_000 };
    const verifier = verifierOver(new Map([['t1', record('t1')]]), clock);
    const header = `Bearer ${await gatewayToken('t1')}`;
    const first = verifier.verifyAuthorization(header);
    assert.ok(first instanceof Promise);
    const principal = await first;
    const second = verifier.verifyAuthorization(header);
    assert.ok(!(second instanceof Promise));
    assert.deepEqual(second, principal);
    assert.deepEqual(principal, {
      tokenId: 't1',
      account: 'acct',
      admin: false,
      issuer: 'gateway',
    });
  });

  it('refuses a remembered token whose row has expired, as a rejection', async () => {
    const clock = { now: 10_000 };
    const verifier = verifierOver(new Map([['t2', record('t2', { expiresAt: 10_500 })]]), clock);
    const header = `Bearer ${await gatewayToken('t2')}`;
    await verifier.verifyAuthorization(header);
    clock.now = 10_500;
    const refused = verifier.verifyAuthorization(header);
    assert.ok(refused instanceof Promise);
    await assert.rejects(refused, { code: 'InvalidApiKey', message: /token has expired/ });
  });

  it('sees a revocation once the remembered row is older than the cache time, as before', async () => {
    const clock = { now: 10_000 };
    const rows = new Map([['t3', record('t3')]]);
    const verifier = verifierOver(rows, clock);
    const header = `Bearer ${await gatewayToken('t3')}`;
    await verifier.verifyAuthorization(header);
    rows.set('t3', record('t3', { revokedAt: 10_001 }));
    clock.now = 10_900;
    assert.ok(!(verifier.verifyAuthorization(header) instanceof Promise));
    clock.now = 11_001;
    await assert.rejects(Promise.resolve(verifier.verifyAuthorization(header)), {
      message: /token has been revoked/,
    });
  });

  it('rejects a missing or malformed header rather than throwing', async () => {
    const verifier = verifierOver(new Map(), { now: 10_000 });
    for (const header of [undefined, '', 'Basic abc'])
      await assert.rejects(verifier.verifyAuthorization(header) as Promise<unknown>, {
        code: 'InvalidApiKey',
      });
  });
});

describe('the rate gate lets a token without limits through at once', () => {
  const unlimited: TokenLimits = NO_LIMITS;

  function admissionOver(limits: Map<string, TokenLimits>) {
    const now = () => 10_000;
    return new TokenAdmission({
      limits: new TtlCache({ find: async (id: string) => limits.get(id) }, 1000, now),
      limiter: new MemoryRateLimiter(now),
      quota: acceptingQuota(),
      prices: {},
      leaseTtlMs: 30_000,
      now,
      log: silentLog,
    });
  }
  const principal = (tokenId: string) => ({
    tokenId,
    account: 'acct',
    admin: false,
    issuer: 'gateway' as const,
  });

  it('waits for the limits the first time, then passes without a promise', async (t) => {
    const admission = admissionOver(new Map([['free', unlimited]]));
    t.after(() => admission.close());
    const first = admission.pass(principal('free'));
    assert.ok(first instanceof Promise);
    assert.equal(await first, NO_SLOT);
    assert.equal(admission.pass(principal('free')), NO_SLOT);
  });

  it('still counts every request of a token with a rate limit, through the limiter', async (t) => {
    const admission = admissionOver(new Map([['limited', { ...unlimited, requestsPerMinute: 1 }]]));
    t.after(() => admission.close());
    await admission.pass(principal('limited'));
    const second = admission.pass(principal('limited'));
    assert.ok(second instanceof Promise);
    await assert.rejects(second, { code: 'Throttling.RateQuota' });
  });

  it('holds a concurrency slot for a token with a concurrency limit', async (t) => {
    const admission = admissionOver(new Map([['one', { ...unlimited, maxConcurrent: 1 }]]));
    t.after(() => admission.close());
    const held = await admission.pass(principal('one'));
    assert.notEqual(held, NO_SLOT);
    await assert.rejects(Promise.resolve(admission.pass(principal('one'))), {
      code: 'Throttling.RateQuota',
    });
    await held.release();
    assert.notEqual(await admission.pass(principal('one')), NO_SLOT);
  });
});
