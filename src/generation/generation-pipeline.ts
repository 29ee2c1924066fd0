import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type {
  Admission,
  AdmissionTicket,
  AttemptFacts,
  BilledSoFar,
  Settled,
  Settlement,
} from '../admission/admission.js';
import { leaseLost } from '../admission/lease-lost.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import { MODEL_A } from '../domain/models.js';
import { ChannelFailure } from '../channels/channel-failure.js';
import {
  type Engine,
  type EngineImage,
  type EngineJob,
  type EngineOutput,
  type EngineRun,
  FailedAfterProduction,
} from '../engine/engine.js';
import { outputOf, stopEarly } from '../engine/engine-run.js';
import { CallerGone } from '../errors/caller-gone.js';
import { LEDGER_CODES } from '../errors/error-table.js';
import type { InputLoader } from '../inputs/input-loader.js';
import { describe, emptyOutcome, type GenerationOutcome } from '../ledger/generation-outcome.js';
import type { ResultStore } from '../storage/result-store.js';
import { checkBoxesInsideImages } from '../validate/bbox-bounds.js';
import { MAX_SEED } from '../validate/request-schemas.js';
import type {
  Generation,
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

/** A generation whose images are stored, and what it comes to once billed as planned. */
interface Produced {
  ok: true;
  result: GenerationResult;
  ticket: AdmissionTicket;
  settlement: Settlement;
  planned: GenerationOutcome;
}

type Failed = Extract<Generation, { ok: false }>;

/**
 * inputs -> admission -> engine -> results -> settlement. Everything that can reject a request
 * (image checks, limits, quota) runs before the engine, so a rejected request costs nothing.
 * Every ending, success or failure, comes back as a value that says what the request came to.
 */
export class GenerationPipeline implements GenerationService {
  constructor(private readonly stages: PipelineStages) {}

  async generate(request: GenerationRequest, context: GenerationContext): Promise<Generation> {
    const produced = await this.produce(request, context);
    if (!produced.ok) return produced;
    const { result, ticket, settlement, planned } = produced;
    let settled: Settled;
    try {
      settled = await ticket.settle(settlement);
    } catch (error) {
      return { ok: false, error, outcome: unsettled(planned, await ticket.release(), error) };
    }
    const outcome = settledOutcome(planned, settled, context.task !== undefined);
    if (settled.outcome === 'billed') return { ok: true, result, outcome };
    return {
      ok: false,
      error: settled.outcome === 'caller-gone' ? new CallerGone() : leaseLost(),
      outcome,
    };
  }

  async generateUnbilled(
    request: GenerationRequest,
    context: GenerationContext,
  ): Promise<UnbilledGeneration | Failed> {
    const produced = await this.produce(request, context);
    if (!produced.ok) return produced;
    const { result, ticket, settlement, planned } = produced;
    // Handed over: the caller has the images, whatever becomes of its connection afterwards.
    const handedOver: Settlement = Object.assign({}, settlement, {
      caller: undefined,
      handedOver: true,
    });
    return {
      ok: true,
      result,
      outcome: Object.assign({}, planned, { imagesDelivered: 0 }),
      billHandedOver: async () => {
        try {
          return settledOutcome(planned, await ticket.settle(handedOver), false);
        } catch {
          await ticket.release();
          return deliveredUnbilled(planned);
        }
      },
      release: async (error) => unsettled(planned, await ticket.release(), error),
    };
  }

  /** Runs the request up to its settlement; on any failure its ticket is released. */
  private async produce(
    request: GenerationRequest,
    context: GenerationContext,
  ): Promise<Produced | Failed> {
    const description = describe(request);
    let facts: Partial<GenerationOutcome> = {};
    let ticket: AdmissionTicket | undefined;
    let incremental: IncrementalDelivery | undefined;
    try {
      // Most requests carry no image: they skip the loader, and its turn of the queue.
      const inputs =
        request.images.length === 0
          ? noInputs(context.signal)
          : await this.stages.inputs.load(request.images, context.signal, {
              resolve: context.resolveUploads === true,
              owner: context.principal.tokenId,
            });
      // The last of the request's checks, before anything is reserved.
      checkBoxesInsideImages(request, inputs);
      const output = outputSize(request, inputs);

      ticket = await (context.admission ?? this.stages.admission).admit({
        principal: context.principal,
        request,
        maxImages: description.imagesRequested,
        labels: context.labels,
        claim: context.claim,
        task: context.task,
      });
      const admittedAt = performance.now();
      incremental =
        context.handOver === undefined
          ? undefined
          : new IncrementalDelivery({
              ticket,
              results: this.stages.results,
              maxImages: description.imagesRequested,
              handOver: context.handOver,
            });
      let produced: EngineOutput;
      try {
        const run = this.stages.engine.generate(
          engineJob(request, context, { inputs, output }, incremental),
        );
        produced =
          incremental === undefined ? await outputOf(run) : await offered(run, incremental);
      } catch (error) {
        facts = attemptOf(error, performance.now() - admittedAt);
        // The engine stopped because a delivery failed: that failure is the request's.
        throw (await incremental?.settled()) ?? unwrapped(error);
      }
      facts = {
        channel: produced.channel,
        upstreamMs: produced.upstreamMs ?? performance.now() - admittedAt,
        queueMs: produced.queueMs,
        imagesReported: produced.imagesReported,
        imagesReceived: produced.images.length,
      };
      return await this.stored(request, context, {
        produced,
        ticket,
        incremental,
        inputs,
        planned: Object.assign(emptyOutcome(description), facts),
      });
    } catch (error) {
      const outcome = Object.assign(emptyOutcome(description), facts, {
        // Images handed over one by one were received, whatever the engine says on its way out.
        imagesReceived: Math.max(facts.imagesReceived ?? 0, incremental?.received ?? 0),
      });
      const billed = ticket === undefined ? undefined : await ticket.release();
      return { ok: false, error, outcome: unsettled(outcome, billed, error) };
    }
  }

  /** Stores what the engine produced (or hands it over one by one) and plans its settlement. */
  private async stored(
    request: GenerationRequest,
    context: GenerationContext,
    stage: {
      produced: EngineOutput;
      ticket: AdmissionTicket;
      incremental: IncrementalDelivery | undefined;
      inputs: readonly LoadedImage[];
      planned: GenerationOutcome;
    },
  ): Promise<Produced> {
    const { produced, ticket, incremental, planned } = stage;
    // An upstream that sends more than asked: the extras are recorded, never delivered or billed.
    const toDeliver = produced.images.slice(0, planned.description?.imagesRequested);
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
    const storageMs =
      incremental !== undefined
        ? incremental.storageMs
        : toDeliver.some((image) => image.kind === 'png')
          ? performance.now() - storageStarted
          : undefined;
    const tokens =
      produced.tokens ??
      (request.model === MODEL_A
        ? estimateTokens(request, stage.inputs, produced.width, produced.height, imageUrls.length)
        : { input: 0, output: 0 });
    const result: GenerationResult = {
      imageUrls,
      width: produced.width,
      height: produced.height,
      tokens,
      createdAt: context.labels.receivedAt,
    };
    const attempt: AttemptFacts = {
      channel: planned.channel,
      upstreamMs: planned.upstreamMs,
      imagesReported: planned.imagesReported,
      imagesReceived: planned.imagesReceived,
      queueMs: planned.queueMs,
      storageMs,
    };
    const settlement: Settlement = Object.assign(attempt, {
      imagesDelivered: imageUrls.length,
      width: produced.width,
      height: produced.height,
      result,
      caller: context.signal,
    });
    return {
      ok: true,
      result,
      ticket,
      settlement,
      planned: Object.assign({}, planned, {
        storageMs,
        imagesDelivered: imageUrls.length,
        outputSize: `${produced.width}*${produced.height}`,
      }),
    };
  }
}

/** The engine's job: the request, its loaded images and size, and the signal that stops it. */
function engineJob(
  request: GenerationRequest,
  context: GenerationContext,
  loaded: Pick<EngineJob, 'inputs' | 'output'>,
  incremental: IncrementalDelivery | undefined,
): EngineJob {
  const job: EngineJob = {
    request,
    inputs: loaded.inputs,
    output: loaded.output,
    seed: request.parameters.seed ?? randomInt(0, MAX_SEED + 1),
    requestId: context.requestId,
    signal:
      incremental === undefined
        ? context.signal
        : AbortSignal.any([asAbortSignal(context.signal), incremental.stopped]),
  };
  if (context.storeImages === true) job.storeImages = true;
  return job;
}

/**
 * The engine's output, each image offered to the delivery as soon as the engine yields it. Once
 * the delivery has stopped, the run is stopped too and the delivery's failure thrown.
 */
async function offered(run: EngineRun, incremental: IncrementalDelivery): Promise<EngineOutput> {
  for (;;) {
    const step = await run.next();
    if (step.done === true) return step.value;
    incremental.offer(step.value.image, step.value.index);
    if (incremental.stopped.aborted) {
      await stopEarly(run);
      throw incremental.stopped.reason;
    }
  }
}

/** What is known of the attempt that failed: the channel tried last and the upstream's time. */
function attemptOf(error: unknown, sinceAdmissionMs: number): Partial<GenerationOutcome> {
  if (error instanceof FailedAfterProduction) return { ...error.produced };
  if (error instanceof ChannelFailure)
    return { channel: error.channel, upstreamMs: error.upstreamMs };
  return { upstreamMs: sinceAdmissionMs };
}

/** The failure itself, out of the report of what was produced before it. */
function unwrapped(error: unknown): unknown {
  return error instanceof FailedAfterProduction ? error.error : error;
}

/**
 * A request billed by its settlement, or refused by it: the row it wrote says which. A task's
 * settlement that did not bill wrote no row: the task's ending writes it.
 */
function settledOutcome(
  planned: GenerationOutcome,
  settled: Settled,
  task: boolean,
): GenerationOutcome {
  const { row } = settled;
  if (task && settled.outcome !== 'billed')
    return Object.assign({}, planned, { imagesDelivered: 0, imagesBilled: 0, costMicros: 0 });
  return Object.assign({}, planned, {
    imagesDelivered: row.imagesDelivered,
    imagesBilled: row.imagesBilled,
    costMicros: row.costMicros,
    code: row.errorCode,
    status: row.status,
    recorded: row,
  });
}

/**
 * A request that ended without settling: what it billed image by image stays billed (an
 * incremental stream), nothing else; a caller who left is recorded as such, even one whose answer
 * still ended cleanly on this side.
 */
function unsettled(
  outcome: GenerationOutcome,
  billed: BilledSoFar | undefined,
  error: unknown,
): GenerationOutcome {
  const ended = Object.assign({}, outcome, {
    imagesDelivered: billed?.imagesDelivered ?? 0,
    imagesBilled: billed?.imagesBilled ?? 0,
    costMicros: billed?.costMicros ?? 0,
    outputSize: (billed?.imagesBilled ?? 0) > 0 ? outcome.outputSize : undefined,
  });
  if (error instanceof CallerGone) {
    ended.code = 'CallerGone';
    ended.status = LEDGER_CODES.CallerGone.status;
  }
  return ended;
}

/** An answer handed over whose bill then failed: the images were delivered, billed nothing. */
function deliveredUnbilled(planned: GenerationOutcome): GenerationOutcome {
  return Object.assign({}, planned, {
    imagesBilled: 0,
    costMicros: 0,
    code: 'DeliveredUnbilled' as const,
  });
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
