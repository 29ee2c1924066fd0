import type { FastifyInstance, FastifyRequest } from 'fastify';
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
  /** The front door a request of the scope came in by, as its ledger row names it. */
  frontDoorOf: (request: FastifyRequest) => string;
  /** The model a request refused before validation names; its JSON body's `model` when absent. */
  modelNamedBy?: ((request: FastifyRequest) => unknown) | undefined;
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
      // The ledger row says so: the connection's close comes before the answer's end.
      if (error instanceof CallerGone) return answerCallerGone(request, reply);
      const known = gatewayErrorOf(error, request);
      notReplayed(reply);
      return sendError(reply, known, options.errorShape);
    });
    registerRoutes(scope);
  });
}
