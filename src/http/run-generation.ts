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
import { whenClosed } from './when-closed.js';

export interface RunOptions {
  /** The answer reads the images back from storage (base64), so all of them must be stored. */
  storeImages?: boolean;
  /** `X-DashScope-OssResourceResolve: enable` was sent: `oss://` inputs name uploads. */
  resolveUploads?: boolean;
  /** An incremental stream: each image, once stored and billed, before the request settles. */
  onDelivered?: (url: string, index: number) => void;
  /** Once every image is stored, before any is billed; a replay does not run it (GenerationContext). */
  beforeBilling?: (result: GenerationResult) => Promise<void>;
}

/** A generation's result and the id of the request that produced it (an earlier one when replayed). */
export interface RunResult {
  result: GenerationResult;
  requestId: string;
}

/**
 * Runs a validated request on a route of an accounted scope, whatever its protocol: a repeat of
 * a billed request (Idempotency-Key) gets the first result; otherwise the pipeline runs, and
 * stops when the caller goes away.
 */
export async function runGeneration(
  request: FastifyRequest,
  reply: FastifyReply,
  generation: GenerationService,
  generationRequest: GenerationRequest,
  options: RunOptions = {},
): Promise<RunResult> {
  const account = accountOf(request);
  if (generationRequest.prompt.truncated) reply.header('x-prompt-truncated', 'true');
  const replay = request.idempotentReplay;
  if (replay !== undefined) {
    account.replayOf(generationRequest, maxImagesOf(generationRequest), replay.result);
    answeringReplay(reply);
    return replay;
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
  if (options.onDelivered !== undefined) context.onDelivered = options.onDelivered;
  if (options.beforeBilling !== undefined) context.beforeBilling = options.beforeBilling;
  // The response's close, not the request's: the request closes as soon as its body is read.
  const onClose = () => {
    if (!reply.raw.writableFinished) abort.abort(new CallerGone());
  };
  whenClosed(reply, onClose);
  try {
    const result = await account.track(generation.generate(generationRequest, context));
    return { result, requestId: request.id };
  } finally {
    reply.raw.off('close', onClose);
  }
}
