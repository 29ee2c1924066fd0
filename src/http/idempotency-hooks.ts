import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { maxImagesOf } from '../domain/generation-request.js';
import { fingerprintOf } from '../idempotency/fingerprint.js';
import {
  checkIdempotencyKey,
  type IdempotencyClaim,
  type IdempotencyKeys,
} from '../idempotency/idempotency-keys.js';
import type { RequestAccount } from '../ledger/request-account.js';
import { validateRequest } from '../validate/validate-request.js';

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: IdempotencyClaim | undefined;
  }
}

/** Response headers a replay repeats from the first response. */
const REPLAYED_HEADERS = ['content-type', 'x-prompt-truncated'];

/**
 * Idempotency-Key on the routes of a scope: the first request with a key claims it and runs; a
 * repeat replays the first one's successful answer (or waits while it runs). Runs after
 * authentication and body parsing, before the handler.
 */
export function honourIdempotencyKeys(scope: FastifyInstance, keys: IdempotencyKeys): void {
  scope.decorateRequest('idempotencyClaim', undefined);

  scope.addHook('preHandler', async (request, reply) => {
    const { principal, account } = request;
    if (principal === undefined) return;
    const key = checkIdempotencyKey(request.headers['idempotency-key']);
    if (key === undefined) return;
    const started = await keys.start({
      scope: principal.tokenId ?? `account:${principal.account}`,
      key,
      fingerprint: fingerprintOf(request.body),
      requestId: request.id,
      signal: abortedWhenCallerLeaves(reply),
    });
    if (started.kind === 'run') {
      request.idempotencyClaim = started.claim;
      return;
    }
    if (account !== undefined) describeReplay(account, request.body);
    const { response } = started;
    for (const [name, value] of Object.entries(response.headers)) reply.header(name, value);
    reply.header('idempotent-replayed', 'true');
    reply.code(response.status).send(response.body);
    return reply;
  });

  scope.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotencyClaim;
    if (claim === undefined) return payload;
    request.idempotencyClaim = undefined;
    if (reply.statusCode === 200 && typeof payload === 'string') {
      await claim.complete({
        status: reply.statusCode,
        body: payload,
        headers: replayedHeaders(reply),
        requestId: request.id,
      });
    } else {
      await claim.abandon();
    }
    return payload;
  });
}

function abortedWhenCallerLeaves(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** A replayed body is one that once succeeded, so it validates; its row names model and mode. */
function describeReplay(account: RequestAccount, body: FastifyRequest['body']): void {
  account.replayed = true;
  try {
    const request = validateRequest(body);
    account.describe(request, maxImagesOf(request));
  } catch {
    // Validation rules may have changed since; the row then lacks model and mode.
  }
}

function replayedHeaders(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = reply.getHeader(name);
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}
