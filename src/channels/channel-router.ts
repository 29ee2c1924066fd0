import { ChannelFailure } from './channel-failure.js';
import { GatewayError } from '../errors/gateway-error.js';
import { maxImagesOf } from '../domain/generation-request.js';
import type { ModelId } from '../domain/models.js';
import {
  type Engine,
  type EngineImage,
  type EngineJob,
  type EngineOutput,
  type EngineRun,
  type ImageAt,
  type ProducedImage,
  FailedAfterProduction,
} from '../engine/engine.js';
import { outputOf } from '../engine/engine-run.js';
import type { ResultStore } from '../storage/result-store.js';
import type { AttemptFailure, AttemptResult, UpstreamOutput } from './attempt-result.js';
import { type FailurePolicy, policyFor } from './failure-policy.js';
import { missingFeatures, requiredFeatures } from './capabilities.js';
import type { Channel } from './channel.js';
import { type ChannelStatus, channelStatus } from './channel-status.js';
import { rehostImages, StorageFailure } from './image-rehost.js';
import {
  type AttemptNote,
  channelsExhausted,
  noCapableChannel,
  noChannelConfigured,
} from './routing-outcome.js';
import type { UpstreamHttp } from './upstream-http.js';
import { AttemptClock } from './attempt-clock.js';
import { weightedOrder } from './weighted-order.js';
import type { Log } from '../support/log.js';

export interface RouterDependencies {
  http: UpstreamHttp;
  results: ResultStore;
  /** Longest a request may spend across all its attempts and failovers. */
  deadlineMs: number;
  /** Wall-clock milliseconds, for deadlines and the circuit breakers. */
  now: () => number;
  /**
   * Milliseconds on a monotonic clock with sub-millisecond precision, for the durations the
   * gateway reports (the upstream's, the queue's): `performance.now` unless a test sets one.
   */
  monotonicNow?: () => number;
  random: () => number;
  log: Log;
}

/**
 * Routes a job to the channels that serve its model and can do what it asks: priority tiers in
 * order, weighted random within a tier, moving on to the next channel when an attempt fails in a
 * way that sent nothing the upstream could have acted on. Upstream refusals of the request are
 * the caller's 400; a request that may have been accepted is never sent again.
 */
export class ChannelRouter implements Engine {
  private readonly monotonicNow: () => number;
  private readonly servingByModel = new Map<ModelId, readonly Channel[]>();

  constructor(
    readonly channels: readonly Channel[],
    private readonly dependencies: RouterDependencies,
  ) {
    this.monotonicNow = dependencies.monotonicNow ?? (() => performance.now());
  }

  status(): ChannelStatus[] {
    return this.channels.map(channelStatus);
  }

  /**
   * Yields the images of a channel whose images reach the caller as they are (the local one) as
   * it produces them; those of a channel whose images are re-hosted come with the output. A
   * failed attempt's images may be yielded again, index for index, by the next channel's.
   */
  async *generate(job: EngineJob): EngineRun {
    const model = job.request.model;
    const { now } = this.dependencies;
    const deadlineAt = now() + this.dependencies.deadlineMs;
    const notes: AttemptNote[] = [];
    let lastTried: string | undefined;
    let upstreamMs = 0;
    let queueMs = 0;
    let overloaded = false;
    const triedLast = (error: GatewayError) =>
      lastTried === undefined ? error : new ChannelFailure(error, lastTried, upstreamMs);
    for (const channel of this.candidatesFor(job)) {
      job.signal.throwIfAborted();
      const name = channel.config.name;
      const skipped = this.skipReason(channel, deadlineAt - now());
      if (skipped !== undefined) {
        notes.push({ channel: name, category: 'unavailable', ...skipped });
        continue;
      }

      const started = this.monotonicNow();
      const {
        result,
        limitMs,
        queueMs: attemptQueueMs,
      } = yield* this.attempt(channel, job, deadlineAt);
      queueMs += attemptQueueMs;
      // Time waiting for a turn in the gateway is the gateway's, not the upstream's.
      const attemptUpstreamMs = this.monotonicNow() - started - attemptQueueMs;
      lastTried = name;
      upstreamMs += attemptUpstreamMs;
      if (result.ok)
        return this.outputFrom(channel, job, result.output, attemptUpstreamMs, queueMs);

      const { failure } = result;
      const { policy, detail } = this.judgeFailure(channel, job, failure, limitMs);
      if (policy.then === 'stop') job.signal.throwIfAborted();
      if (policy.then === 'answer-refusal' && failure.callerError !== undefined)
        throw triedLast(failure.callerError);
      if (policy.gatewayOverloaded === true) overloaded = true;
      notes.push(noteOf(name, failure, policy, detail));
      if (policy.then === 'next-unless-accepted' && failure.mayHaveBeenAccepted)
        throw triedLast(channelsExhausted(model, notes, name));
    }
    const exhausted = channelsExhausted(model, notes, undefined);
    throw triedLast(overloaded ? asOverloaded(exhausted) : exhausted);
  }

  /**
   * A successful attempt's output, its images re-hosted unless they reach the caller as they
   * are. Past this point the upstream has produced (and charges for) the images: a failure here
   * carries its report, never a failover.
   */
  private async outputFrom(
    channel: Channel,
    job: EngineJob,
    upstream: UpstreamOutput,
    upstreamMs: number,
    queueMs: number,
  ): Promise<EngineOutput> {
    const name = channel.config.name;
    channel.health.breaker.succeeded();
    channel.health.succeeded(upstreamMs);
    const produced = {
      channel: name,
      upstreamMs,
      imagesReported: upstream.imagesReported,
      imagesReceived: upstream.images.length,
    };
    let images: EngineImage[];
    try {
      // The caller left while the upstream worked: its report is recorded, nothing delivered.
      job.signal.throwIfAborted();
      images = keepsUpstreamUrls(channel, job)
        ? upstream.images
        : await this.rehost(channel, upstream.images, job);
    } catch (error) {
      throw new FailedAfterProduction(error, produced);
    }
    const output: EngineOutput = {
      images,
      width: upstream.width,
      height: upstream.height,
      channel: name,
      upstreamMs,
      queueMs,
    };
    if (upstream.tokens !== undefined) output.tokens = upstream.tokens;
    if (upstream.imagesReported !== undefined) output.imagesReported = upstream.imagesReported;
    return output;
  }

  /**
   * What a failed attempt means (its policy), applied to the channel's breaker and health and to
   * the log; the detail the answer and the channel's status give.
   */
  private judgeFailure(
    channel: Channel,
    job: EngineJob,
    failure: AttemptFailure,
    limitMs: number,
  ): { policy: FailurePolicy; detail: string } {
    const policy = policyFor(failure, job.signal.aborted);
    const detail =
      failure.kind === 'timeout' ? `${failure.detail} (limit ${limitMs} ms)` : failure.detail;
    channel.health.breaker[policy.breaker]();
    if (policy.health === 'failed') channel.health.failed(detail);
    else if (policy.health === 'taken-out') channel.health.takeOut(detail);
    if (policy.log !== undefined)
      this.dependencies.log[policy.log.level](
        { channel: channel.config.name, request_id: job.requestId, kind: failure.kind, detail },
        policy.log.message,
      );
    return { policy, detail };
  }

  /** The channels that serve the job's model and can do what it asks, in the order to try them. */
  private candidatesFor(job: EngineJob): readonly Channel[] {
    const model = job.request.model;
    const serving = this.servingOf(model);
    if (serving.length === 0) throw noChannelConfigured(model);
    const features = requiredFeatures(job.request);
    const capable =
      features.length === 0
        ? serving
        : serving.filter((channel) => missingFeatures(channel.capabilities, features).length === 0);
    if (capable.length === 0)
      throw noCapableChannel(
        model,
        serving.map((channel) => ({
          name: channel.config.name,
          capabilities: channel.capabilities,
        })),
        features,
      );
    if (capable.length === 1) return capable;
    const ranked = capable.map((channel) => ({
      channel,
      priority: channel.config.priority,
      weight: channel.config.weight,
    }));
    return weightedOrder(ranked, this.dependencies.random).map(({ channel }) => channel);
  }

  /** The channels that serve `model`, in their configured order; a router's channels never change. */
  private servingOf(model: ModelId): readonly Channel[] {
    let serving = this.servingByModel.get(model);
    if (serving === undefined) {
      serving = this.channels.filter((channel) => channel.config.models[model] !== undefined);
      this.servingByModel.set(model, serving);
    }
    return serving;
  }

  /** Why `channel` is not tried now, if it is not; acquires the breaker's trial when it is. */
  private skipReason(
    channel: Channel,
    remainingMs: number,
  ): { detail: string; retryAfterMs?: number } | undefined {
    if (channel.health.keyRejected !== undefined)
      return { detail: 'taken out: its key was rejected' };
    if (remainingMs <= 0) return { detail: 'not tried: request deadline reached' };
    if (channel.health.breaker.tryAcquire()) return undefined;
    const reopensAt = channel.health.breaker.reopensAt();
    return {
      detail: 'not tried: circuit open',
      ...(reopensAt === undefined
        ? {}
        : { retryAfterMs: Math.max(0, reopensAt - this.dependencies.now()) }),
    };
  }

  /**
   * Copies upstream URLs into our storage (see keepsUpstreamUrls for when they are not). The
   * images exist (and are billed upstream) by now, so a failure here is never a failover: a 502
   * that counts against the channel's health when the download fails, a 500 that does not when
   * our storage does.
   */
  private async rehost(
    channel: Channel,
    images: ProducedImage[],
    job: EngineJob,
  ): Promise<EngineImage[]> {
    const config = channel.config;
    // Images past the request's count are never delivered or billed: they are counted as
    // received, but not downloaded or stored.
    const wanted = maxImagesOf(job.request);
    try {
      const rehosted = await rehostImages(
        images.slice(0, wanted),
        config.name,
        job.requestId,
        job.signal,
        this.dependencies,
      );
      return [...rehosted, ...images.slice(wanted)];
    } catch (error) {
      if (error instanceof StorageFailure) {
        this.dependencies.log.error(
          { channel: config.name, request_id: job.requestId, err: error.cause },
          'could not store generated images',
        );
      } else if (!job.signal.aborted) {
        const detail = error instanceof Error ? error.message : String(error);
        channel.health.failed(detail);
        this.dependencies.log.warn(
          { channel: config.name, request_id: job.requestId, detail },
          'could not re-host generated images',
        );
      }
      throw error;
    }
  }

  /**
   * One attempt bounded by its clock and the caller's signal; the health counters follow it.
   * Also says what the attempt's time limit came to, for the message when it ran out.
   */
  private async *attempt(
    channel: Channel,
    job: EngineJob,
    deadlineAt: number,
  ): AsyncGenerator<
    ImageAt<ProducedImage>,
    { result: AttemptResult; limitMs: number; queueMs: number },
    undefined
  > {
    const clock = new AttemptClock(
      channel.config.timeoutMs,
      deadlineAt,
      this.dependencies.now,
      this.monotonicNow,
      job.signal,
      () => this.dependencies.http.draining,
    );
    channel.health.started();
    let answered = false;
    try {
      const run = channel.adapter.attempt({
        job,
        upstreamModel: channel.config.models[job.request.model] as string,
        signal: clock.signal,
        upstreamSignal: clock.stopped,
        callerGone: () => job.signal.aborted,
        waitOffTheClock: (wait) => clock.stoppedDuring(wait),
      });
      const result = keepsUpstreamUrls(channel, job) ? yield* run : await outputOf(run);
      answered = true;
      return { result, limitMs: clock.limitMs, queueMs: clock.queueMs };
    } finally {
      // An adapter that threw, or a caller that stopped the run early: no verdict on the channel.
      if (!answered) channel.health.breaker.released();
      clock.end();
      channel.health.finished();
    }
  }
}

/**
 * A local channel's images are ours already; a channel that passes URLs through keeps the
 * upstream's, unless the job needs the bytes (stored for reading back).
 */
function keepsUpstreamUrls(channel: Channel, job: EngineJob): boolean {
  const config = channel.config;
  return config.type === 'local' || (config.passThroughUrls && job.storeImages !== true);
}

/**
 * No channel served, and at least one turned the request away because the gateway's own queue
 * for it was full: that is the gateway shedding load, 503 Overloaded, unless an upstream failed
 * outright (502).
 */
function asOverloaded(exhausted: GatewayError): GatewayError {
  if (exhausted.code !== 'ModelUnavailable') return exhausted;
  return new GatewayError('Overloaded', exhausted.message, { ...exhausted.headers });
}

/** What the final answer says of one failed attempt. */
function noteOf(
  channel: string,
  failure: AttemptFailure,
  policy: FailurePolicy,
  detail: string,
): AttemptNote {
  if (policy.noteCategory !== undefined) return { channel, category: policy.noteCategory, detail };
  const note: AttemptNote = { channel, category: failure.category, detail };
  if (failure.retryAfterMs !== undefined) note.retryAfterMs = failure.retryAfterMs;
  return note;
}
