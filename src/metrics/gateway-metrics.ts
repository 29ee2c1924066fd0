import { Counter, Gauge, Registry } from 'prom-client';
import { RequestPathCounter, RequestPathHistogram } from './request-path-metrics.js';
import { CHANNEL_HEALTH_STATES, type ChannelSnapshot } from './channel-snapshot.js';
import type { LevelGauge } from './level-gauge.js';
import { processMetrics } from './process-metrics.js';
import type { RequestOutcome } from './request-outcome.js';

/** Overhead is milliseconds when all is well; the upper buckets catch a stalled database or disk. */
const OVERHEAD_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** An image takes seconds to a minute upstream; the routing deadline is five minutes by default. */
const UPSTREAM_BUCKETS_S = [0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];

/** Prometheus leaves out a label whose value is empty, which is what "none" should look like. */
const labelOf = (value: string | undefined): string => value ?? '';

/**
 * One gateway's metrics, in a registry of its own (a process may run several gateways) merged
 * with the process's at scrape time. Requests are counted as they end; channel and queue state is
 * read from its owners when scraped, so nothing needs to be kept in step.
 */
export class GatewayMetrics {
  /** Requests being handled now; moved by whoever admits and ends them. */
  readonly inFlightRequests: LevelGauge;
  /** Request body bytes held in memory now; moved by whoever reads and frees them. */
  readonly inFlightBodyBytes: LevelGauge;
  /** Jobs waiting for a local render thread; set by whoever watches the render queue. */
  readonly renderQueueDepth: LevelGauge;

  private readonly registry = new Registry();
  private readonly scraped: Registry;
  private readonly requests = new RequestPathCounter(
    'imagegate_requests_total',
    'Requests answered (or left by their caller: status 499), by route, method, model, status and error code.',
    ['route', 'method', 'model', 'status', 'code'],
  );
  private readonly gatewayOverhead = new RequestPathHistogram(
    'imagegate_gateway_overhead_seconds',
    'Time of a generation request outside upstream channels (validation, inputs, admission, storage, billing).',
    ['model'],
    OVERHEAD_BUCKETS_S,
  );
  private readonly upstreamLatency = new RequestPathHistogram(
    'imagegate_upstream_latency_seconds',
    'Time a generation request spent in upstream channels, all attempts included, by the channel that served or was tried last.',
    ['model', 'channel'],
    UPSTREAM_BUCKETS_S,
  );
  private readonly imagesDelivered = new RequestPathCounter(
    'imagegate_images_delivered_total',
    'Images handed to callers, replays included.',
    ['model'],
  );
  private readonly imagesBilled = new RequestPathCounter(
    'imagegate_images_billed_total',
    'Images billed to tokens.',
    ['model'],
  );
  private readonly requestPath = [
    this.requests,
    this.gatewayOverhead,
    this.upstreamLatency,
    this.imagesDelivered,
    this.imagesBilled,
  ];
  private readChannels: () => readonly ChannelSnapshot[] = () => [];
  private readLedgerQueue: () => number = () => 0;

  constructor() {
    const registers = [this.registry];
    this.inFlightRequests = new Gauge({
      name: 'imagegate_in_flight_requests',
      help: 'Requests being handled.',
      registers,
    });
    this.inFlightBodyBytes = new Gauge({
      name: 'imagegate_in_flight_body_bytes',
      help: 'Request body bytes held in memory.',
      registers,
    });
    this.renderQueueDepth = new Gauge({
      name: 'imagegate_render_queue_depth',
      help: 'Jobs waiting for a local render thread.',
      registers,
    });
    this.registerScrapedState(registers);
    this.scraped = Registry.merge([processMetrics(), this.registry]);
  }

  /** The channels as they stand at each scrape (the router's status, across reloads). */
  observeChannels(read: () => readonly ChannelSnapshot[]): void {
    this.readChannels = read;
  }

  /** Usage rows waiting to be written, as they stand at each scrape. */
  observeLedgerQueue(read: () => number): void {
    this.readLedgerQueue = read;
  }

  requestFinished(outcome: RequestOutcome): void {
    const model = labelOf(outcome.model);
    this.requests.inc([
      labelOf(outcome.route),
      outcome.method,
      model,
      String(outcome.status),
      labelOf(outcome.code),
    ]);
    if (outcome.imagesDelivered > 0) this.imagesDelivered.inc([model], outcome.imagesDelivered);
    if (outcome.imagesBilled > 0) this.imagesBilled.inc([model], outcome.imagesBilled);
    const times = outcome.times;
    if (times === undefined) return;
    this.gatewayOverhead.observe([model], times.gatewayMs / 1000);
    if (times.upstreamMs !== undefined)
      this.upstreamLatency.observe([model, labelOf(outcome.channel)], times.upstreamMs / 1000);
  }

  /** The Content-Type of `scrape()`'s text. */
  get contentType(): string {
    return this.scraped.contentType;
  }

  /** Every metric in Prometheus's text format. */
  async scrape(): Promise<string> {
    const requestPath = this.requestPath.map((metric) => metric.text()).join('\n\n');
    return `${await this.scraped.metrics()}\n${requestPath}\n`;
  }

  /** Metrics whose values belong to other modules and are read from them when scraped. */
  private registerScrapedState(registers: Registry[]): void {
    const channels = () => this.readChannels();
    new Counter({
      name: 'imagegate_channel_attempts_total',
      help: 'Attempts sent to each channel since it was configured.',
      labelNames: ['channel'],
      registers,
      collect() {
        this.reset();
        for (const channel of channels())
          this.inc({ channel: channel.name }, channel.stats.attempts);
      },
    });
    new Counter({
      name: 'imagegate_channel_failures_total',
      help: 'Failed attempts of each channel since it was configured.',
      labelNames: ['channel'],
      registers,
      collect() {
        this.reset();
        for (const channel of channels())
          this.inc({ channel: channel.name }, channel.stats.failures);
      },
    });
    new Gauge({
      name: 'imagegate_channel_in_flight',
      help: 'Attempts each channel is running now.',
      labelNames: ['channel'],
      registers,
      collect() {
        this.reset();
        for (const channel of channels())
          this.set({ channel: channel.name }, channel.stats.inFlight);
      },
    });
    new Gauge({
      name: 'imagegate_channel_state',
      help: "1 for each channel's current state: available (circuit closed), open, half-open or key-rejected.",
      labelNames: ['channel', 'state'],
      registers,
      collect() {
        this.reset();
        for (const channel of channels())
          for (const state of CHANNEL_HEALTH_STATES)
            this.set({ channel: channel.name, state }, channel.health === state ? 1 : 0);
      },
    });
    const ledgerQueue = () => this.readLedgerQueue();
    new Gauge({
      name: 'imagegate_ledger_queue_rows',
      help: 'Usage rows of unbilled requests waiting to be written to the ledger.',
      registers,
      collect() {
        this.set(ledgerQueue());
      },
    });
  }
}
