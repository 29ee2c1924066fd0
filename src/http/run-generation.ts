import type { FastifyReply, FastifyRequest } from 'fastify';
import { type GenerationRequest, maxImagesOf } from '../domain/generation-request.js';
import { CallerGone } from '../errors/caller-gone.js';
import type {
  GenerationContext,
  GenerationResult,
  GenerationService,
} from '../generation/generation-service.js';
import { principalOf } from './authentication-hook.js';
import { accountOf } from './ledger-hooks.js';
import { CancellationSource } from '../support/cancellation.js';
import { answeringReplay } from './idempotency-hooks.js';
import type { PublicOrigins } from './public-origins.js';
import { whenClosed } from './when-closed.js';

export interface RunOptions {
  /** The answer's image URLs name the origin the request was sent to, where allowed. */
  origins: PublicOrigins;
  /** The answer reads the images back from storage (base64), so all of them must be stored. */
  storeImages?: boolean;
  /** `X-DashScope-OssResourceResolve: enable` was sent: `oss://` inputs name uploads. */
  resolveUploads?: boolean;
  /** An incremental stream: each image, once stored and billed, before the request settles. */
  onDelivered?: (url: string, index: number) => void;
  /** Once every image is stored, before any is billed; a replay does not run it (GenerationContext). */
  beforeBilling?: (result: GenerationResult) => Promise<void>;
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
 * a billed request (Idempotency-Key) gets the first result; otherwise the pipeline runs, and
 * stops when the caller goes away. Either way the URLs answered name this request's origin
 * (PublicOrigins): a result is stored, and replayed, as the pipeline produced it.
 */
export async function runGeneration(
  request: FastifyRequest,
  reply: FastifyReply,
  generation: GenerationService,
  generationRequest: GenerationRequest,
  options: RunOptions,
): Promise<RunResult> {
  const account = accountOf(request);
  if (generationRequest.prompt.truncated) reply.header('x-prompt-truncated', 'true');
  const present = options.origins.presenterFor(request.host);
  const replay = request.idempotentReplay;
  if (replay !== undefined) {
    account.replayOf(generationRequest, maxImagesOf(generationRequest), replay.result);
    answeringReplay(reply);
    return { result: withUrls(replay.result, present), requestId: replay.requestId };
  }
  const abort = new CancellationSource();
  const context: GenerationContext = {
    requestId: request.id,
    principal: principalOf(request),
    signal: abort,
    account,
  };
  // Set one by one rather than spread from objects made for the purpose, on every request.
  if (options.storeImages === true) context.storeImages = true;
  if (options.resolveUploads === true) context.resolveUploads = true;
  const { onDelivered } = options;
  if (onDelivered !== undefined)
    context.onDelivered =
      present === undefined
        ? onDelivered
        : (url, index) => {
            onDelivered(present(url), index);
          };
  if (options.beforeBilling !== undefined) context.beforeBilling = options.beforeBilling;
  // The response's close, not the request's: the request closes as soon as its body is read.
  const onClose = () => {
    if (!reply.raw.writableFinished) abort.abort(new CallerGone());
  };
  whenClosed(reply, onClose);
  try {
    const result = await account.track(generation.generate(generationRequest, context));
    return { result: withUrls(result, present), requestId: request.id };
  } finally {
    reply.raw.off('close', onClose);
  }
}
