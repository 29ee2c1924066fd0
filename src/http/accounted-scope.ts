import type { FastifyInstance } from 'fastify';
import type { RequestGate } from '../admission/admission.js';
import type { Authenticator } from '../auth/authenticator.js';
import { CallerGone } from '../errors/caller-gone.js';
import type { IdempotencyKeys } from '../idempotency/idempotency-keys.js';
import type { LedgerWriter } from '../ledger/ledger-writer.js';
import { addAuthenticationHooks } from './hooks/authentication.js';
import { answerCallerGone, type ErrorShape, gatewayErrorOf, sendError } from './error-reply.js';
import { addGateHooks } from './hooks/gate.js';
import { addIdempotencyHooks, notReplayed } from './hooks/idempotency.js';
import { addLedgerHooks } from './hooks/ledger.js';
import { addWorkspaceHooks } from './hooks/workspace.js';

export interface AccountedScopeOptions {
  authenticator: Authenticator;
  ledger: LedgerWriter;
  /** Rate and concurrency limits, before the body is read; without it, none. */
  gate?: RequestGate | undefined;
  /** Idempotency-Key handling; without it the header is not looked at. */
  idempotency?: IdempotencyKeys | undefined;
  now: () => number;
  /** How the scope's errors are worded; the gateway's own error body when absent. */
  errorShape?: ErrorShape | undefined;
}

/**
 * An encapsulated scope for routes that generate images, whatever their protocol: requests are
 * authenticated and held to their token's rate and concurrency limits before their body is read,
 * accounted in the usage ledger (one row each), and may carry an Idempotency-Key. A failure's code reaches the ledger from the GatewayError itself.
 * Every front door registers its routes through this, so none of them re-implements billing.
 */
export function registerAccountedScope(
  app: FastifyInstance,
  options: AccountedScopeOptions,
  registerRoutes: (scope: FastifyInstance) => void,
): void {
  void app.register(async (scope) => {
    addAuthenticationHooks(scope, options.authenticator);
    addLedgerHooks(scope, options);
    addWorkspaceHooks(scope);
    if (options.gate !== undefined) addGateHooks(scope, options.gate);
    if (options.idempotency !== undefined) addIdempotencyHooks(scope, options.idempotency);
    scope.setErrorHandler((error, request, reply) => {
      if (error instanceof CallerGone) {
        // The ledger row says so.
        request.account?.callerLeft();
        return answerCallerGone(request, reply);
      }
      const known = gatewayErrorOf(error, request);
      request.account?.failed(known);
      notReplayed(reply);
      return sendError(reply, known, options.errorShape);
    });
    registerRoutes(scope);
  });
}
