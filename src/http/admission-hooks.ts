import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../domain/principal.js';
import { isModelId } from '../domain/models.js';
import { maxImagesOf } from '../domain/generation-request.js';
import { fingerprintOf } from '../idempotency/fingerprint.js';
import {
  checkIdempotencyKey,
  type IdempotencyClaim,
  type IdempotencyKeys,
} from '../idempotency/idempotency-keys.js';
import { UsageDraft } from '../ledger/usage-draft.js';
import type { UsageRow } from '../domain/usage-row.js';
import { validateRequest } from '../validate/validate-request.js';

export interface AdmissionHooksOptions {
  /** The URLs of the generation route; only requests to them are recorded. */
  generationUrls: readonly string[];
  ledger: { record(row: UsageRow): void };
  idempotency: IdempotencyKeys;
  now: () => number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The generation request's ledger row in the making. */
    usage: UsageDraft | undefined;
    idempotencyClaim: IdempotencyClaim | undefined;
  }
}

/** Response headers a replay repeats from the first response. */
const REPLAYED_HEADERS = ['content-type', 'x-prompt-truncated'];

/**
 * Hooks of the generation route for the usage ledger and Idempotency-Key. Every request that
 * passed authentication gets exactly one ledger row: billed requests with their settlement,
 * everything else (rejections, failures, replays) here, once the response is sent.
 */
export function registerAdmissionHooks(app: FastifyInstance, options: AdmissionHooksOptions) {
  const generationUrls = new Set(options.generationUrls);
  app.decorateRequest('usage', undefined);
  app.decorateRequest('idempotencyClaim', undefined);

  app.addHook('onRequest', async (request) => {
    if (request.method === 'POST' && generationUrls.has(request.routeOptions.url ?? ''))
      request.usage = new UsageDraft(request.id, options.now());
  });

  app.addHook('preHandler', async (request, reply) => {
    const principal = request.principal;
    if (request.usage === undefined || principal === undefined) return;
    const key = checkIdempotencyKey(request.headers['idempotency-key']);
    if (key === undefined) return;
    const started = await options.idempotency.start({
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
    describeReplay(request.usage, request.body);
    const { response } = started;
    for (const [name, value] of Object.entries(response.headers)) reply.header(name, value);
    reply.header('idempotent-replayed', 'true');
    reply.code(response.status).send(response.body);
    return reply;
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const usage = request.usage;
    if (usage === undefined) return payload;
    for (const [name, value] of Object.entries(usage.responseHeaders))
      if (!reply.hasHeader(name)) reply.header(name, value);
    if (reply.statusCode >= 400) usage.errorCode = errorCodeOf(payload);
    const claim = request.idempotencyClaim;
    if (claim !== undefined) {
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
    }
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    const usage = request.usage;
    const principal = request.principal;
    if (usage === undefined || principal === undefined || usage.recorded) return;
    usage.recorded = true;
    // A request refused by validation still names its model, when it names a real one.
    usage.model ??= modelNamedIn(request.body);
    options.ledger.record(
      usage.toRow(principal as Principal, {
        status: reply.statusCode,
        costMicros: 0,
        endedAt: options.now(),
      }),
    );
  });
}

function abortedWhenCallerLeaves(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  reply.raw.once('close', onClose);
  return controller.signal;
}

/** A replayed body is one that once succeeded, so it validates; its row names model and mode. */
function describeReplay(usage: UsageDraft, body: FastifyRequest['body']) {
  usage.replayed = true;
  try {
    const request = validateRequest(body);
    usage.describe(request, maxImagesOf(request));
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

function modelNamedIn(body: unknown): string | undefined {
  const model = (body as { model?: unknown } | null | undefined)?.model;
  return isModelId(model) ? model : undefined;
}

function errorCodeOf(payload: unknown): string | undefined {
  if (typeof payload !== 'string' || payload.length > 65_536) return undefined;
  try {
    const body = JSON.parse(payload) as { code?: unknown };
    return typeof body.code === 'string' ? body.code : undefined;
  } catch {
    return undefined;
  }
}
