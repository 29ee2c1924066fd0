import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GenerationRequest } from '../domain/generation-request.js';
import { CallerGone } from '../errors/caller-gone.js';
import type {
  Generation,
  GenerationContext,
  GenerationResult,
  GenerationService,
  UnbilledGeneration,
} from '../generation/generation-service.js';
import { describe, emptyOutcome, replayOutcome } from '../ledger/generation-outcome.js';
import { principalOf } from './hooks/authentication.js';
import { followWork, recordOutcome, rowLabelsOf } from './hooks/ledger.js';
import { CancellationSource } from '../support/cancellation.js';
import { answeringReplay } from './hooks/idempotency.js';
import type { PublicOrigins } from './public-origins.js';
import { answerFinished } from './answer-finished.js';
import { whenClosed } from './when-closed.js';

export interface RunOptions {
  /** The answer's image URLs name the origin the request was sent to, where allowed. */
  origins: PublicOrigins;
  /** The answer reads the images back from storage (base64), so all of them must be stored. */
  storeImages?: boolean;
  /** `X-DashScope-OssResourceResolve: enable` was sent: `oss://` inputs name uploads. */
  resolveUploads?: boolean;
  /**
   * An incremental stream: each image once stored, before the request settles; resolves whether it
   * reached the caller, and only then is it billed.
   */
  handOver?: (url: string, index: number) => Promise<boolean>;
}

/**
 * A generation's result, its image URLs naming the request's origin, and the id of the request
 * that produced it (an earlier one when replayed).
 */
export interface RunResult {
  result: GenerationResult;
  requestId: string;
}

type Presenter = ((url: string) => string) | undefined;

function withUrls(result: GenerationResult, present: Presenter): GenerationResult {
  if (present === undefined) return result;
  return Object.assign({}, result, { imageUrls: result.imageUrls.map(present) });
}

/**
 * Runs a validated request on a route of an accounted scope, whatever its protocol: a repeat of
 * a billed request (Idempotency-Key) gets the first result; otherwise the pipeline runs, bills the
 * images before they are answered, and stops when the caller goes away. Either way the URLs
 * answered name this request's origin (PublicOrigins): a result is stored, and replayed, as the
 * pipeline produced it. The request's ledger row follows what the run came to; a failed run
 * throws its error, to be answered.
 */
export async function runGeneration(
  request: FastifyRequest,
  reply: FastifyReply,
  generation: GenerationService,
  generationRequest: GenerationRequest,
  options: RunOptions,
): Promise<RunResult> {
  const run = await runUntilStored(request, reply, generationRequest, options, (context) =>
    generation.generate(generationRequest, context),
  );
  if ('requestId' in run) return run;
  if (!run.ok) throw run.error;
  return {
    result: withUrls(run.result, options.origins.presenterFor(request.host)),
    requestId: request.id,
  };
}

/**
 * As runGeneration, but the images are left unbilled for the answer that carries their bytes:
 * `unbilled` is absent from a replay, which the request it repeats paid for.
 */
export async function runUnbilledGeneration(
  request: FastifyRequest,
  reply: FastifyReply,
  generation: GenerationService,
  generationRequest: GenerationRequest,
  options: RunOptions,
): Promise<RunResult & { unbilled?: UnbilledGeneration }> {
  const run = await runUntilStored(request, reply, generationRequest, options, (context) =>
    generation.generateUnbilled(generationRequest, context),
  );
  if ('requestId' in run) return run;
  if (!run.ok) throw run.error;
  const present = options.origins.presenterFor(request.host);
  return { result: withUrls(run.result, present), requestId: request.id, unbilled: run };
}

type Failed = Extract<Generation, { ok: false }>;

/** A replay's result, or what `start` made of the request's generation while its caller stayed. */
async function runUntilStored<T extends Generation | UnbilledGeneration>(
  request: FastifyRequest,
  reply: FastifyReply,
  generationRequest: GenerationRequest,
  options: RunOptions,
  start: (context: GenerationContext) => Promise<T>,
): Promise<RunResult | T | Failed> {
  if (generationRequest.prompt.truncated) reply.header('x-prompt-truncated', 'true');
  const replay = request.idempotentReplay;
  if (replay !== undefined) {
    recordOutcome(request, replayOutcome(generationRequest, replay.result));
    answeringReplay(reply);
    const present = options.origins.presenterFor(request.host);
    return { result: withUrls(replay.result, present), requestId: replay.requestId };
  }
  const abort = new CancellationSource();
  const context: GenerationContext = {
    requestId: request.id,
    principal: principalOf(request),
    signal: abort,
    labels: rowLabelsOf(request),
  };
  // Set one by one rather than spread from objects made for the purpose, on every request.
  const claim = request.idempotencyClaim;
  if (claim !== undefined) context.claim = claim.fence;
  if (options.storeImages === true) context.storeImages = true;
  if (options.resolveUploads === true) context.resolveUploads = true;
  const { handOver } = options;
  if (handOver !== undefined) {
    const present = options.origins.presenterFor(request.host);
    context.handOver =
      present === undefined ? handOver : (url, index) => handOver(present(url), index);
  }
  // The response's close, not the request's: the request closes as soon as its body is read.
  const onClose = () => {
    if (!answerFinished(reply.raw)) abort.abort(new CallerGone());
  };
  whenClosed(reply, onClose);
  const run = start(context);
  followWork(request, run);
  let ended: T | Failed;
  try {
    ended = await run;
  } catch (error) {
    // A generation answers its failures as values; anything it throws all the same is one too.
    ended = { ok: false, error, outcome: emptyOutcome(describe(generationRequest)) };
  } finally {
    reply.raw.off('close', onClose);
  }
  recordOutcome(request, ended.outcome);
  return ended;
}
