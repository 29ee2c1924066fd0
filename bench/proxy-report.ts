import type { ArrivalSpread } from './proxy-arrivals.js';
import type { BenchRow } from './bench-row.js';
import { figure, markdownTable } from './proxy-table.js';
import type { LoadResult } from './proxy-wrk.js';

/** One fixed-duration load through one setup. */
export interface LoadRow {
  setup: string;
  upstreamDelayMs: number;
  /** The machine's 1-minute load average as the row started: other work shares the cores. */
  loadAverage: number;
  result: LoadResult;
  /** CPU of the process under test (the gateway, nginx's worker, or the fake when direct). */
  cpuUsPerRequest: number;
  /** The share of that CPU spent on the process's main thread (the event loop), 0 to 1. */
  mainThreadShare: number;
  /** CPU of the fake upstream; undefined when it is the process under test. */
  upstreamCpuUsPerRequest: number | undefined;
  /**
   * CPU of every PostgreSQL and every Redis process on the machine, for the rows on them;
   * undefined for the others.
   */
  servicesCpuUsPerRequest: { postgres: number; redis: number } | undefined;
  /**
   * The size of the gateway's SQLite write-ahead log once the load is over: what a load that
   * never pauses leaves on disk beside the database. Undefined for the other processes.
   */
  sqliteLogBytes: number | undefined;
}

/** One caller alone: the median of sequential requests. */
export interface AloneRow {
  setup: string;
  medianMs: number;
  errors: number;
}

/** Many callers held open by a slow upstream, through one setup. */
export interface CrowdResult {
  setup: string;
  /** Cold: the process's first crowd, which opens its connections to the upstream; warm: the next. */
  run: 'cold' | 'warm';
  callers: number;
  upstreamDelayMs: number;
  seconds: number;
  /** The machine's 1-minute load average as the run started. */
  loadAverage: number;
  result: LoadResult;
  idleRssBytes: number;
  /**
   * The most RSS while nearly all callers waited and none was answered; undefined: never so, or
   * a warm run, which does not read it.
   */
  heldRssBytes: number | undefined;
  peakRssBytes: number;
  /**
   * Connections the upstream accepted during the run: the proxy's (the callers' own, when direct),
   * and any the bench's readings of the fake opened.
   */
  upstreamConnections: number;
  /** How the run's first thousand calls reached the upstream; undefined if some never did. */
  firstWave: ArrivalSpread | undefined;
  /**
   * CPU per answered request, user and system: the main thread, where the crowd's requests queue,
   * and the other threads beside it (V8's collector helpers above all, libuv's pool).
   */
  cpuUsPerRequest: { mainThread: number; otherThreads: number };
  /**
   * SYNs the kernel dropped during the run because the listening queue in front of the callers
   * was full (machine-wide); undefined where the kernel does not say.
   */
  synsDropped: number | undefined;
}

/** The largest legal request, straight to the upstream and through the gateway. */
export interface LargeResult {
  bodyBytes: number;
  imageBytes: number;
  repeats: number;
  /** The machine's 1-minute load average as the run started. */
  loadAverage: number;
  directMs: number;
  gatewayMs: number;
  /** From the request's start until the upstream had the forwarded body whole. */
  gatewayForwardedMs: number;
  gatewayCpuMsPerRequest: number;
  idleRssBytes: number;
  peakRssBytes: number;
}

/** A large upstream image re-hosted by a default gateway, one request at a time. */
export interface LargeImageResult {
  imageBytes: number;
  repeats: number;
  /** The machine's 1-minute load average as the run started. */
  loadAverage: number;
  gatewayMs: number;
  gatewayCpuMsPerRequest: number;
  idleRssBytes: number;
  /** The highest resident set over the whole run, every request's garbage included. */
  peakRssBytes: number;
  /** A request's peak over the resident set just before it (median, and the largest). */
  medianGrowthBytes: number;
  largestGrowthBytes: number;
}

export interface ProxyReport {
  machine: string;
  loadBefore: string;
  loadAfter: string;
  started: Date;
  tools: string;
  settings: string;
  loads: LoadRow[];
  alone: AloneRow[];
  crowd: readonly CrowdResult[] | string;
  large: LargeResult | string;
  largeImage: LargeImageResult | string;
}

const MIB = 1024 * 1024;

export function printReport(report: ProxyReport): void {
  const lines = [
    '',
    `proxy bench, ${report.started.toISOString()}`,
    `machine: ${report.machine}`,
    `load average before: ${report.loadBefore}; after: ${report.loadAfter}`,
    report.tools,
    report.settings,
    '',
    ...(report.loads.length === 0 ? [] : [loadTable(report.loads), '']),
    ...(report.alone.length === 0 ? [] : [aloneTable(report.alone), '']),
    typeof report.crowd === 'string' ? report.crowd : crowdTable(report.crowd),
    '',
    typeof report.large === 'string' ? report.large : largeTable(report.large),
    '',
    typeof report.largeImage === 'string' ? report.largeImage : largeImageTable(report.largeImage),
    '',
  ];
  console.log(lines.join('\n'));
}

function loadTable(loads: readonly LoadRow[]): string {
  return markdownTable(
    [
      'setup',
      'upstream delay',
      'req/s',
      'p50 ms',
      'p99 ms',
      'errors',
      'CPU µs/req',
      'main thread %',
      'fake upstream CPU µs/req',
      'PostgreSQL + Redis CPU µs/req',
      'SQLite log MiB',
      'load avg',
    ],
    loads.map((row) => [
      row.setup,
      `${row.upstreamDelayMs} ms`,
      figure(row.result.requestsPerSecond, 0),
      figure(row.result.p50Ms, 2),
      figure(row.result.p99Ms, 2),
      String(row.result.errors),
      figure(row.cpuUsPerRequest, 0),
      figure(row.mainThreadShare * 100, 0),
      figure(row.upstreamCpuUsPerRequest, 0),
      row.servicesCpuUsPerRequest === undefined
        ? '-'
        : `${figure(row.servicesCpuUsPerRequest.postgres, 0)} + ${figure(row.servicesCpuUsPerRequest.redis, 0)}`,
      figure(row.sqliteLogBytes === undefined ? undefined : row.sqliteLogBytes / MIB, 1),
      figure(row.loadAverage, 1),
    ]),
  );
}

function aloneTable(rows: readonly AloneRow[]): string {
  return markdownTable(
    ['one request alone', 'median ms', 'added over direct, ms', 'errors'],
    aloneRows(rows),
  );
}

function aloneRows(rows: readonly AloneRow[]): string[][] {
  const direct = rows[0]?.medianMs;
  return rows.map((row) => [
    row.setup,
    figure(row.medianMs, 3),
    direct === undefined || row === rows[0] ? '-' : figure(row.medianMs - direct, 3),
    String(row.errors),
  ]);
}

/** RSS over the crowd's idle baseline, per caller, in KiB. */
function perCallerKiB(bytes: number, row: CrowdResult): number {
  return (bytes - row.idleRssBytes) / row.callers / 1024;
}

function crowdTable(crowd: readonly CrowdResult[]): string {
  const first = crowd[0];
  if (first === undefined) return 'crowd: no setup matched --rows';
  const perCaller = (bytes: number | undefined, row: CrowdResult) =>
    bytes === undefined ? '-' : figure(perCallerKiB(bytes, row), 1);
  return markdownTable(
    [
      `${first.callers} callers, ${first.upstreamDelayMs} ms upstream, ${first.seconds} s`,
      'run',
      'answered',
      'p50 ms',
      'p99 ms',
      'errors',
      'RSS idle MiB',
      'held KiB/caller',
      'peak KiB/caller',
      'upstream connections opened',
      'first wave at the upstream within p50 / p99 ms',
      'CPU µs/request, main thread / other threads',
      'SYNs dropped',
      'load avg',
    ],
    crowd.map((row) => [
      row.setup,
      row.run,
      String(row.result.requests),
      figure(row.result.p50Ms, 0),
      figure(row.result.p99Ms, 0),
      String(row.result.errors),
      figure(row.idleRssBytes / MIB, 0),
      perCaller(row.heldRssBytes, row),
      perCaller(row.peakRssBytes, row),
      String(row.upstreamConnections),
      row.firstWave === undefined
        ? '-'
        : `${figure(row.firstWave.p50Ms, 0)} / ${figure(row.firstWave.p99Ms, 0)}`,
      `${figure(row.cpuUsPerRequest.mainThread, 0)} / ${figure(row.cpuUsPerRequest.otherThreads, 0)}`,
      row.synsDropped === undefined ? '-' : String(row.synsDropped),
      figure(row.loadAverage, 1),
    ]),
  );
}

function largeTable(large: LargeResult): string {
  const growth = large.peakRssBytes - large.idleRssBytes;
  return markdownTable(
    [
      `largest legal request: 9 PNG data URLs of ${large.imageBytes} bytes, body ${large.bodyBytes} bytes (${figure(large.bodyBytes / MIB, 1)} MiB)`,
      'value',
    ],
    [
      [
        `sent straight to the fake upstream, ms (median of ${large.repeats})`,
        figure(large.directMs, 0),
      ],
      [
        `through the gateway, answered, ms (median of ${large.repeats})`,
        figure(large.gatewayMs, 0),
      ],
      [
        'through the gateway, until the upstream had the whole body, ms',
        figure(large.gatewayForwardedMs, 0),
      ],
      ['gateway CPU per request, ms', figure(large.gatewayCpuMsPerRequest, 0)],
      [
        'gateway RSS idle / peak, MiB',
        `${figure(large.idleRssBytes / MIB, 0)} / ${figure(large.peakRssBytes / MIB, 0)}`,
      ],
      ['peak RSS growth / body size', figure(growth / large.bodyBytes, 2)],
      ['load average as it started', figure(large.loadAverage, 1)],
    ],
  );
}

function largeImageTable(large: LargeImageResult): string {
  const growth = large.peakRssBytes - large.idleRssBytes;
  return markdownTable(
    [
      `an upstream image of ${large.imageBytes} bytes (${figure(large.imageBytes / MIB, 1)} MiB) re-hosted`,
      'value',
    ],
    [
      [
        `through the gateway, answered, ms (median of ${large.repeats})`,
        figure(large.gatewayMs, 0),
      ],
      ['gateway CPU per request, ms', figure(large.gatewayCpuMsPerRequest, 0)],
      [
        'gateway RSS idle / peak, MiB',
        `${figure(large.idleRssBytes / MIB, 0)} / ${figure(large.peakRssBytes / MIB, 0)}`,
      ],
      [
        `one request's peak RSS growth / image size, median (largest) of ${large.repeats}`,
        `${figure(large.medianGrowthBytes / large.imageBytes, 2)} (${figure(large.largestGrowthBytes / large.imageBytes, 2)})`,
      ],
      [
        `peak RSS growth over all ${large.repeats} / image size`,
        figure(growth / large.imageBytes, 2),
      ],
      ['load average as it started', figure(large.loadAverage, 1)],
    ],
  );
}

/** The figures the runner's own table shows: throughput and the latency one caller sees. */
export function headlineRows(report: ProxyReport): BenchRow[] {
  const direct = report.alone[0]?.medianMs ?? 0;
  return [
    ...report.loads
      .filter((row) => row.upstreamDelayMs === 0)
      .map((row) => ({
        name: `proxy: ${row.setup}`,
        value: row.result.requestsPerSecond,
        unit: 'req/s' as const,
        note: `${CONNECTIONS_NOTE}; p99 ${figure(row.result.p99Ms, 1)} ms; ${figure(row.cpuUsPerRequest, 0)} µs CPU/req`,
      })),
    ...report.alone.slice(1).map((row) => ({
      name: `proxy: one request alone, added by ${row.setup}`,
      value: row.medianMs - direct,
      unit: 'ms' as const,
      note: 'median over direct',
    })),
    ...(typeof report.crowd === 'string' ? [] : report.crowd).map((row) => ({
      name: `proxy: ${row.callers} callers, ${row.run}, ${row.setup}`,
      value: row.result.p50Ms,
      unit: 'ms' as const,
      note: `p50 at ${row.upstreamDelayMs} ms upstream; p99 ${figure(row.result.p99Ms, 0)} ms; ${row.result.errors} errors; peak ${figure(perCallerKiB(row.peakRssBytes, row), 1)} KiB/caller`,
    })),
  ];
}

const CONNECTIONS_NOTE = 'wrk, 64 connections';
