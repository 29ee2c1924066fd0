import type { TokenAdmissionOptions } from '../../src/admission/token-admission.js';

/** A quota book that reserves, settles and bills everything: for tests of the rate gate alone. */
export function acceptingQuota(): TokenAdmissionOptions['quota'] {
  return {
    reserve: async () => true,
    renew: async () => undefined,
    extend: async () => true,
    settle: async (plan) => ({ outcome: 'billed' as const, row: plan.row }),
    billDelivered: async () => 'billed' as const,
    isBilled: async () => false,
    billedOnStandIn: async () => 0,
    release: async () => undefined,
    reclaimExpired: async () => 0,
  };
}
