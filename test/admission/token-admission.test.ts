import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MemoryRateLimiter } from '../../src/admission/memory-rate-limiter.js';
import { TokenAdmission } from '../../src/admission/token-admission.js';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { NO_LIMITS, type TokenLimits } from '../../src/domain/token-limits.js';
import type { Principal } from '../../src/domain/principal.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { rowLabelsFor } from '../helpers/row-labels.js';
import { silentLog } from '../../src/support/log.js';
import { validateRequest } from '../../src/validate/validate-request.js';
import { acceptingQuota } from '../helpers/accepting-quota.js';
import { modelABody } from '../helpers/requests.js';

const principal = { tokenId: 'tok_a', account: 'acct', admin: false, issuer: 'gateway' as const };

function limitsOf(overrides: Partial<TokenLimits>): TokenLimits {
  return { ...NO_LIMITS, ...overrides };
}

/**
 * An admission whose limits are at hand (`remembered`) or only found, counting what it asks;
 * `limits` undefined: the token has no limits row.
 */
function admissionWith(t: TestContext, limits: TokenLimits | undefined, remembered: boolean) {
  const asked = { finds: 0, reservations: [] as number[] };
  const quota = acceptingQuota();
  const admission = new TokenAdmission({
    limits: {
      find: async () => {
        asked.finds += 1;
        return limits;
      },
      peek: () => (remembered ? { value: limits } : undefined),
    },
    limiter: new MemoryRateLimiter(Date.now),
    quota: {
      ...quota,
      reserve: async (reservation, ...rest) => {
        asked.reservations.push(reservation.images);
        return quota.reserve(reservation, ...rest);
      },
    },
    prices: {},
    leaseTtlMs: 30_000,
    now: Date.now,
    log: silentLog,
  });
  t.after(() => admission.close());
  return { admission, asked };
}

/** A model A request that may produce two images. */
function admitting(admission: TokenAdmission, caller: Principal = principal) {
  const request = validateRequest(modelABody());
  return admission.admit({
    principal: caller,
    request,
    maxImages: 2,
    labels: rowLabelsFor('req-1'),
  });
}

describe('TokenAdmission.admit', () => {
  it('admits a token without an image quota whose limits are at hand without asking for them again or reserving', async (t) => {
    const { admission, asked } = admissionWith(t, limitsOf({}), true);
    const ticket = await admitting(admission);
    assert.deepEqual(asked, { finds: 0, reservations: [] });
    await ticket.release();
  });

  it('admits a token without a limits row, remembered as such, as one without limits', async (t) => {
    const { admission, asked } = admissionWith(t, undefined, true);
    await (await admitting(admission)).release();
    assert.deepEqual(asked, { finds: 0, reservations: [] });
  });

  it('admits a caller without a token id (an external identity) without limits or reservation', async (t) => {
    const { admission, asked } = admissionWith(t, limitsOf({ imageQuota: 10 }), true);
    const external: Principal = {
      tokenId: undefined,
      account: 'acct',
      admin: false,
      issuer: 'external',
    };
    await (await admitting(admission, external)).release();
    assert.deepEqual(asked, { finds: 0, reservations: [] });
  });

  it('looks the limits up when they are not at hand, and still reserves nothing without a quota', async (t) => {
    const { admission, asked } = admissionWith(t, limitsOf({}), false);
    await (await admitting(admission)).release();
    assert.deepEqual(asked, { finds: 1, reservations: [] });
  });

  it('reserves the request’s images when the token has a quota, its limits at hand or not', async (t) => {
    for (const remembered of [true, false]) {
      const { admission, asked } = admissionWith(t, limitsOf({ imageQuota: 10 }), remembered);
      await (await admitting(admission)).release();
      assert.deepEqual(asked.reservations, [2], `limits at hand: ${remembered}`);
    }
  });

  it('refuses a model the token may not use, its limits at hand or not, before reserving', async (t) => {
    for (const remembered of [true, false]) {
      for (const imageQuota of [undefined, 10]) {
        const limits = limitsOf({ allowedModels: [MODEL_B], imageQuota });
        const { admission, asked } = admissionWith(t, limits, remembered);
        await assert.rejects(admitting(admission), (error: unknown) => {
          assert.ok(error instanceof GatewayError);
          assert.equal(error.code, 'InvalidApiKey');
          assert.match(error.message, new RegExp(`may not use model ${MODEL_A}`));
          return true;
        });
        assert.deepEqual(asked.reservations, []);
      }
    }
  });
});
