import { Counter, Gauge, Registry } from 'prom-client';
import { RequestPathCounter, RequestPathHistogram } from './request-path-metrics.js';
import { CHANNEL_HEALTH_STATES, type ChannelSnapshot } from './channel-snapshot.js';
import type { LevelGauge } from './level-gauge.js';
import { processMetrics } from './process-metrics.js';
import type { FinishedRequest } from './finished-request.js';
import { NO_WORK, type WorkLevels } from './work-levels.js';

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
  /** Event streams started and not yet closed; moved by whoever answers with one. */
  readonly eventStreamsOpen: LevelGauge;
  /** Upload forms being read, checked and saved; moved by the upload route. */
  readonly uploadsInFlight: LevelGauge;

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
  private readImageFetches: () => WorkLevels = () => NO_WORK;
  private readRenderJobs: () => WorkLevels = () => NO_WORK;

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
    this.eventStreamsOpen = new Gauge({
      name: 'imagegate_event_streams_open',
      help: 'Event-stream answers started and not yet closed.',
      registers,
    });
    this.uploadsInFlight = new Gauge({
      name: 'imagegate_uploads_in_flight',
      help: 'Upload forms being read, checked and saved.',
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

  /** Input image URL fetches under way and waiting for a place, as they stand at each scrape. */
  observeImageFetches(read: () => WorkLevels): void {
    this.readImageFetches = read;
  }

  /** Local engine jobs rendering and waiting for a turn, as they stand at each scrape. */
  observeRenderJobs(read: () => WorkLevels): void {
    this.readRenderJobs = read;
  }

  requestFinished(finished: FinishedRequest): void {
    const model = labelOf(finished.model);
    this.requests.inc([
      labelOf(finished.route),
      finished.method,
      model,
      String(finished.status),
      labelOf(finished.code),
    ]);
    if (finished.imagesDelivered > 0) this.imagesDelivered.inc([model], finished.imagesDelivered);
    if (finished.imagesBilled > 0) this.imagesBilled.inc([model], finished.imagesBilled);
    const times = finished.times;
    if (times === undefined) return;
    this.gatewayOverhead.observe([model], times.gatewayMs / 1000);
    if (times.upstreamMs !== undefined)
      this.upstreamLatency.observe([model, labelOf(finished.channel)], times.upstreamMs / 1000);
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
    for (const { kind, name, help, valueOf } of PER_CHANNEL)
      new (kind === 'counter' ? Counter : Gauge)({
        name,
        help,
        labelNames: ['channel'],
        registers,
        collect() {
          this.reset();
          for (const channel of channels())
            setValue(this, { channel: channel.name }, valueOf(channel));
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
    const levels: { name: string; help: string; read: () => number }[] = [
      {
        name: 'imagegate_ledger_queue_rows',
        help: 'Usage rows of unbilled requests waiting to be written to the ledger.',
        read: () => this.readLedgerQueue(),
      },
      {
        name: 'imagegate_image_fetches_in_flight',
        help: 'Input image URL fetches under way.',
        read: () => this.readImageFetches().running,
      },
      {
        name: 'imagegate_image_fetches_waiting',
        help: "Input image URL fetches waiting for a place among the node's concurrent fetches.",
        read: () => this.readImageFetches().waiting,
      },
      {
        name: 'imagegate_render_jobs_running',
        help: 'Local engine jobs holding a turn (rendering).',
        read: () => this.readRenderJobs().running,
      },
      {
        name: 'imagegate_render_jobs_waiting',
        help: 'Local engine jobs waiting for a turn.',
        read: () => this.readRenderJobs().waiting,
      },
    ];
    for (const { name, help, read } of levels)
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
  }
}

/** The channels' counters and gauges read from the router's status, one series per channel. */
const PER_CHANNEL: {
  kind: 'counter' | 'gauge';
  name: string;
  help: string;
  valueOf: (channel: ChannelSnapshot) => number;
}[] = [
  {
    kind: 'counter',
    name: 'imagegate_channel_attempts_total',
    help: 'Attempts sent to each channel since it was configured.',
    valueOf: (channel) => channel.stats.attempts,
  },
  {
    kind: 'counter',
    name: 'imagegate_channel_failures_total',
    help: 'Failed attempts of each channel since it was configured.',
    valueOf: (channel) => channel.stats.failures,
  },
  {
    kind: 'gauge',
    name: 'imagegate_channel_in_flight',
    help: 'Attempts each channel is running now.',
    valueOf: (channel) => channel.stats.inFlight,
  },
];

/** A counter read at scrape time is set from its source, as a gauge is: both were reset first. */
function setValue(
  metric: Counter<'channel'> | Gauge<'channel'>,
  labels: { channel: string },
  value: number,
): void {
  if (metric instanceof Counter) metric.inc(labels, value);
  else metric.set(labels, value);
}
