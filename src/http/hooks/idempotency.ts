import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GenerationResult } from '../../generation/generation-service.js';
import { fingerprintOf, taskFingerprintOf } from '../../idempotency/fingerprint.js';
import { wantsTask } from '../async-header.js';
import { answerFinished } from '../answer-finished.js';
import { whenClosed } from '../when-closed.js';
import { emptyOutcome } from '../../ledger/generation-outcome.js';
import { outcomeWhenSettled, recordOutcome } from './ledger.js';
import {
  checkIdempotencyKey,
  type IdempotencyClaim,
  type IdempotencyKeys,
} from '../../idempotency/idempotency-keys.js';

/** A repeat of a request that was billed: its result, and the id of the request that made it. */
export interface IdempotentReplay {
  result: GenerationResult;
  requestId: string;
}

/** Says that an answer is a billed request's result given again. */
const REPLAYED_HEADER = 'idempotent-replayed';

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: IdempotencyClaim | undefined;
    /**
     * Set when the request repeats a billed one: the route answers it without generating, and
     * calls `answeringReplay` once the request is one it can answer so.
     */
    idempotentReplay: IdempotentReplay | undefined;
  }
}

/**
 * Idempotency-Key on the routes of a scope: the first request with a key claims it and runs; its
 * settlement publishes the result under the key; a repeat gets that result (or waits while the
 * first runs), shaped by its route as the first answer was. Runs after authentication and body
 * parsing, before the handler.
 */
export function addIdempotencyHooks(scope: FastifyInstance, keys: IdempotencyKeys): void {
  scope.decorateRequest('idempotencyClaim', undefined);
  scope.decorateRequest('idempotentReplay', undefined);

  // Most requests carry no key: they pass in the same turn, without the promise of an async hook.
  scope.addHook('preHandler', (request, reply, done) => {
    if (request.principal === undefined || request.headers['idempotency-key'] === undefined)
      return done();
    let key;
    try {
      key = checkIdempotencyKey(request.headers['idempotency-key']);
    } catch (error) {
      return done(error as Error);
    }
    if (key === undefined) return done();
    // A request answered here (a stored response replayed) goes no further: done is not called.
    claimOrReplay(keys, request, reply, key).then((answered) => {
      if (!answered) done();
    }, done);
  });
}

/**
 * Marks the answer as a replay (`Idempotent-Replayed: true`). The route calls it once it answers
 * with the first result, not before: a repeat of the key that the route refuses (the same body
 * sent to the other front door, whose fields it does not take) is a refusal, not a replay.
 */
export function answeringReplay(reply: FastifyReply): void {
  reply.header(REPLAYED_HEADER, 'true');
}

/** An error answer is not the first request's result, even where a replay was under way. */
export function notReplayed(reply: FastifyReply): void {
  reply.removeHeader(REPLAYED_HEADER);
}

/**
 * The first request with `key` claims it and runs; a repeat waits for it and gets its result. True
 * when the request was answered here and must go no further.
 */
async function claimOrReplay(
  keys: IdempotencyKeys,
  request: FastifyRequest,
  reply: FastifyReply,
  key: string,
): Promise<boolean> {
  const { principal } = request;
  if (principal === undefined) return false;
  const waiting = new AbortController();
  const onClose = () => {
    if (!answerFinished(reply.raw)) waiting.abort();
  };
  whenClosed(reply, onClose);
  const started = await keys
    .start({
      scope: principal.tokenId ?? `account:${principal.account}`,
      key,
      fingerprint: wantsTask(request.headers)
        ? taskFingerprintOf(request.body)
        : fingerprintOf(request.body),
      requestId: request.id,
      signal: waiting.signal,
    })
    .finally(() => reply.raw.off('close', onClose));
  if (started.kind === 'run') {
    const { claim } = started;
    request.idempotencyClaim = claim;
    // Whatever the end, a claim left unpublished is forgotten so that a repeat runs again; an
    // answer billed once handed over publishes it with that bill, which may still be under way.
    whenClosed(reply, () => {
      const settled = outcomeWhenSettled(request);
      if (settled instanceof Promise) void settled.then(() => claim.finish());
      else void claim.finish();
    });
    return false;
  }
  const { outcome } = started;
  if (outcome.kind === 'result') {
    request.idempotentReplay = {
      result: JSON.parse(outcome.result) as GenerationResult,
      requestId: outcome.requestId,
    };
    return false;
  }
  // A response stored whole by an earlier version of the gateway: replayed byte for byte.
  recordOutcome(request, Object.assign(emptyOutcome(undefined), { replayed: true }));
  const { response } = outcome;
  for (const [name, value] of Object.entries(response.headers)) reply.header(name, value);
  reply.header(REPLAYED_HEADER, 'true');
  reply.code(response.status).send(response.body);
  return true;
}
