import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type {
  Admission,
  AdmissionTicket,
  FailureDetails,
  Settlement,
} from '../admission/admission.js';
import { type GenerationRequest, maxImagesOf } from '../domain/generation-request.js';
import { MODEL_A } from '../domain/models.js';
import { ChannelFailure } from '../channels/channel-failure.js';
import type { Engine, EngineImage, EngineJob } from '../engine/engine.js';
import type { InputLoader } from '../inputs/input-loader.js';
import type { ResultStore } from '../storage/result-store.js';
import { checkBoxesInsideImages } from '../validate/bbox-bounds.js';
import { MAX_SEED } from '../validate/request-schemas.js';
import type {
  GenerationContext,
  GenerationResult,
  GenerationService,
  UnbilledGeneration,
} from './generation-service.js';
import { outputSize } from './output-size.js';
import { IncrementalDelivery } from './incremental-delivery.js';
import { estimateTokens } from './token-estimate.js';
import { asAbortSignal, type Cancellation } from '../support/cancellation.js';
import type { LoadedImage } from '../domain/loaded-image.js';

export interface PipelineStages {
  inputs: InputLoader;
  admission: Admission;
  engine: Engine;
  results: ResultStore;
}

/** A generation whose images are stored, and what its settlement will say. */
interface Produced {
  result: GenerationResult;
  ticket: AdmissionTicket;
  settlement: Settlement;
}

/**
 * inputs -> admission -> engine -> results -> settlement. Everything that can reject a request
 * (image checks, limits, quota) runs before the engine, so a rejected request costs nothing.
 */
export class GenerationPipeline implements GenerationService {
  constructor(private readonly stages: PipelineStages) {}

  async generate(
    request: GenerationRequest,
    context: GenerationContext,
  ): Promise<GenerationResult> {
    const { result, ticket, settlement } = await this.produce(request, context);
    try {
      await ticket.settle(settlement);
    } catch (error) {
      await ticket.release(error, settlement);
      throw error;
    }
    return result;
  }

  async generateUnbilled(
    request: GenerationRequest,
    context: GenerationContext,
  ): Promise<UnbilledGeneration> {
    const { result, ticket, settlement } = await this.produce(request, context);
    // Handed over: the caller has the images, whatever becomes of its connection afterwards.
    const handedOver: Settlement = Object.assign({}, settlement, {
      callerPresent: () => true,
      handedOver: true,
    });
    return {
      result,
      billHandedOver: async () => {
        try {
          await ticket.settle(handedOver);
        } catch (error) {
          await ticket.release(error, settlement);
          context.account.deliveredUnbilled(settlement.imagesDelivered, result);
          throw error;
        }
      },
      release: (error) => ticket.release(error, settlement),
    };
  }

  /** Runs the request up to its settlement; on any failure its ticket is released. */
  private async produce(request: GenerationRequest, context: GenerationContext): Promise<Produced> {
    const maxImages = maxImagesOf(request);
    context.account.describe(request, maxImages);
    // Most requests carry no image: they skip the loader, and its turn of the queue.
    const inputs =
      request.images.length === 0
        ? noInputs(context.signal)
        : await this.stages.inputs.load(request.images, context.signal, {
            resolve: context.resolveUploads === true,
            owner: context.principal.tokenId,
          });
    checkBoxesInsideImages(request, inputs);
    const output = outputSize(request, inputs);
    const seed = request.parameters.seed ?? randomInt(0, MAX_SEED + 1);

    const ticket = await (context.admission ?? this.stages.admission).admit({
      principal: context.principal,
      request,
      maxImages,
      account: context.account,
    });
    let attempt: FailureDetails = {};
    const callerPresent = () => !context.signal.aborted;
    const incremental =
      context.handOver === undefined
        ? undefined
        : new IncrementalDelivery({
            ticket,
            results: this.stages.results,
            maxImages,
            handOver: context.handOver,
          });
    try {
      const job: EngineJob = {
        request,
        inputs,
        output,
        seed,
        requestId: context.requestId,
        signal:
          incremental === undefined
            ? context.signal
            : AbortSignal.any([asAbortSignal(context.signal), incremental.stopped]),
        reportProduced: (report) => {
          attempt = report;
        },
      };
      if (context.storeImages === true) job.storeImages = true;
      if (incremental !== undefined) job.onImage = incremental.offer;
      const produced = await this.stages.engine.generate(job).catch(async (error: unknown) => {
        // The engine stopped because a delivery failed: that failure is the request's.
        throw (await incremental?.settled()) ?? error;
      });
      context.account.queueMs = produced.queueMs;
      const engineReport = {
        channel: produced.channel,
        upstreamMs: produced.upstreamMs,
        imagesReported: produced.imagesReported,
        imagesReceived: produced.images.length,
      };
      attempt = engineReport;
      // An upstream that sends more than asked: the extras are recorded, never delivered or billed.
      const toDeliver = produced.images.slice(0, maxImages);
      const storageStarted = performance.now();
      const imageUrls =
        incremental !== undefined
          ? await incremental.finish(toDeliver)
          : (urlsOf(toDeliver) ??
            (await Promise.all(
              toDeliver.map((image) =>
                image.kind === 'png' ? this.stages.results.save(image.bytes) : image.url,
              ),
            )));
      if (toDeliver.some((image) => image.kind === 'png'))
        context.account.storageMs = performance.now() - storageStarted;
      const tokens =
        produced.tokens ??
        (request.model === MODEL_A
          ? estimateTokens(request, inputs, produced.width, produced.height, imageUrls.length)
          : { input: 0, output: 0 });
      const result: GenerationResult = {
        imageUrls,
        width: produced.width,
        height: produced.height,
        tokens,
        createdAt: context.account.receivedAt,
      };
      const settlement: Settlement = {
        channel: engineReport.channel,
        upstreamMs: engineReport.upstreamMs,
        imagesReported: engineReport.imagesReported,
        imagesReceived: engineReport.imagesReceived,
        imagesDelivered: imageUrls.length,
        width: produced.width,
        height: produced.height,
        result: () => JSON.stringify(result),
        callerPresent,
      };
      return { result, ticket, settlement };
    } catch (error) {
      const details: FailureDetails =
        error instanceof ChannelFailure
          ? { channel: error.channel, upstreamMs: error.upstreamMs }
          : attempt;
      // Images the engine handed over one by one were received, whatever it says on its way out.
      if (incremental !== undefined)
        details.imagesReceived = Math.max(details.imagesReceived ?? 0, incremental.received);
      await ticket.release(error, details);
      throw error;
    }
  }
}

/** A request without input images has none to load, unless its caller has gone already. */
function noInputs(signal: Cancellation): LoadedImage[] {
  signal.throwIfAborted();
  return [];
}

/**
 * The images' URLs when every one has its URL already (stored or passed through); undefined
 * when some must be stored first. Saves such a request the turns of an await on Promise.all.
 */
function urlsOf(images: readonly EngineImage[]): string[] | undefined {
  const urls: string[] = [];
  for (const image of images) {
    if (image.kind === 'png') return undefined;
    urls.push(image.url);
  }
  return urls;
}
