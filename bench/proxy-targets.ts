import type { CrowdResult, LoadRow, ProxyReport } from './proxy-report.js';
import { SETUP } from './proxy-setup-names.js';
import { figure, markdownTable } from './proxy-table.js';

/**
 * The proxy targets as this run measured them, each beside the bare Node.js proxy's figure (the
 * floor under any Node gateway) where the target has one. A target the gateway misses and the bare
 * proxy misses too says so in its verdict: the line is under what Node.js itself reached in this
 * run. A target whose rows did not run (an `--only` or `--rows` that left them out, nginx or wrk
 * missing) says so instead of a verdict.
 */
export function targetsTable(report: ProxyReport, manyTokens: number): string {
  const rows: TargetRow[] = [
    ...passThroughTargets(report.loads),
    ...rehostTargets(report),
    aloneTarget(report),
    ...crowdTargets(report.crowd),
    ...servicesTargets(report.loads, manyTokens),
    largestTarget(report),
  ];
  return markdownTable(
    ['target', 'wanted', 'this run', 'bare Node.js proxy', 'met'],
    rows.map((row) => [
      row.target,
      row.wanted,
      row.measured ?? '-',
      row.floor ?? '-',
      verdictOf(row),
    ]),
  );
}

/**
 * The machine the targets were set on, for the absolute ones (µs, ms, req/s), as its references
 * measured there: nginx's CPU and req/s, and the fake upstream's req/s called directly, at 0 ms.
 */
export const REFERENCE_MACHINE = {
  nginxCpuUs: 23,
  nginxRequestsPerSecond: 22_000,
  directRequestsPerSecond: 28_100,
};

/**
 * This run's machine beside the machine the targets were set on, by the same references:
 * machines of the same kind have differed up to fivefold, so an absolute target reads against
 * this. Undefined when neither reference ran.
 */
export function machineComparison(loads: readonly LoadRow[]): string | undefined {
  const nginx = loadOf(loads, SETUP.nginx, 0);
  const direct = loadOf(loads, SETUP.direct, 0);
  if (nginx === undefined && direct === undefined) return undefined;
  const parts: string[] = [];
  if (nginx !== undefined)
    parts.push(
      `nginx ${figure(nginx.cpuUsPerRequest, 0)} µs per request (the reference machine's ${REFERENCE_MACHINE.nginxCpuUs}) and ` +
        `${figure(nginx.result.requestsPerSecond, 0)} req/s (${REFERENCE_MACHINE.nginxRequestsPerSecond})`,
    );
  if (direct !== undefined)
    parts.push(
      `the fake upstream direct ${figure(direct.result.requestsPerSecond, 0)} req/s (${REFERENCE_MACHINE.directRequestsPerSecond})`,
    );
  const speeds = [
    nginx === undefined ? undefined : REFERENCE_MACHINE.nginxCpuUs / nginx.cpuUsPerRequest,
    nginx === undefined
      ? undefined
      : nginx.result.requestsPerSecond / REFERENCE_MACHINE.nginxRequestsPerSecond,
    direct === undefined
      ? undefined
      : direct.result.requestsPerSecond / REFERENCE_MACHINE.directRequestsPerSecond,
  ].filter((speed): speed is number => speed !== undefined && Number.isFinite(speed));
  const speed =
    speeds.length === 0 ? undefined : speeds.reduce((sum, value) => sum + value, 0) / speeds.length;
  return (
    `This machine beside the machine the targets were set on, at 0 ms: ${parts.join('; ')}. ` +
    `It runs these references at ${figure(speed, 2)} times that machine's speed (` +
    `${speeds.length === 1 ? 'one ratio' : `the mean of ${speeds.length} ratios`}); the targets in ` +
    'µs, ms and req/s were set there.'
  );
}

interface TargetRow {
  target: string;
  wanted: string;
  measured: string | undefined;
  floor?: string | undefined;
  met: boolean | undefined;
  /** Whether the bare Node.js proxy's figure meets the same line. */
  floorMet?: boolean | undefined;
}

function verdictOf(row: TargetRow): string {
  if (row.met === undefined) return 'not measured';
  if (row.met) return 'yes';
  return row.floorMet === false ? 'no (nor the bare Node.js proxy)' : 'no';
}

/** A crowd's p50 and p99 against the bare Node.js proxy's in the same run. */
const CROWD_LATENCY_RATIO = 1.05;
/** 30 KB of resident memory per caller in flight, in KiB as the crowd table reads it. */
const CROWD_HELD_KIB = 30_000 / 1024;

function loadOf(
  loads: readonly LoadRow[],
  setup: string,
  upstreamDelayMs: number,
): LoadRow | undefined {
  return loads.find((row) => row.setup === setup && row.upstreamDelayMs === upstreamDelayMs);
}

function ratio(top: number | undefined, bottom: number | undefined): number | undefined {
  return top === undefined || bottom === undefined || bottom === 0 ? undefined : top / bottom;
}

function atMost(value: number | undefined, limit: number): boolean | undefined {
  return value === undefined ? undefined : value <= limit;
}

function atLeast(value: number | undefined, limit: number): boolean | undefined {
  return value === undefined ? undefined : value >= limit;
}

function passThroughTargets(loads: readonly LoadRow[]): TargetRow[] {
  const cpu = loadOf(loads, SETUP.passThrough, 0)?.cpuUsPerRequest;
  const floorCpu = loadOf(loads, SETUP.bareNode, 0)?.cpuUsPerRequest;
  const againstNginx = (setup: string, delay: number) =>
    ratio(
      loadOf(loads, setup, delay)?.result.requestsPerSecond,
      loadOf(loads, SETUP.nginx, delay)?.result.requestsPerSecond,
    );
  return [
    {
      target: '1. pass-through CPU per request',
      wanted: '≤ 150 µs',
      measured: cpu === undefined ? undefined : `${figure(cpu, 0)} µs`,
      floor: floorCpu === undefined ? undefined : `${figure(floorCpu, 0)} µs`,
      met: atMost(cpu, 150),
      floorMet: atMost(floorCpu, 150),
    },
    ...[
      { delay: 0, wanted: 1 / 3, text: '≥ 0.333' },
      { delay: 50, wanted: 0.95, text: '≥ 0.95' },
    ].map(({ delay, wanted, text }) => {
      const measured = againstNginx(SETUP.passThrough, delay);
      const floor = againstNginx(SETUP.bareNode, delay);
      return {
        target: `1. pass-through req/s against nginx's, upstream delay ${delay} ms`,
        wanted: text,
        measured: figure(measured, 3),
        floor: figure(floor, 3),
        met: atLeast(measured, wanted),
        floorMet: atLeast(floor, wanted),
      };
    }),
  ];
}

function rehostTargets(report: ProxyReport): TargetRow[] {
  const cpuRatio = ratio(
    loadOf(report.loads, SETUP.rehost, 0)?.cpuUsPerRequest,
    loadOf(report.loads, SETUP.passThrough, 0)?.cpuUsPerRequest,
  );
  const large = typeof report.largeImage === 'string' ? undefined : report.largeImage;
  const oneRequest = large === undefined ? undefined : large.medianGrowthBytes / large.imageBytes;
  const allOfThem =
    large === undefined ? undefined : (large.peakRssBytes - large.idleRssBytes) / large.imageBytes;
  return [
    {
      target: '2. re-hosting CPU against pass-through',
      wanted: '≤ 1.5',
      measured: figure(cpuRatio, 3),
      met: atMost(cpuRatio, 1.5),
    },
    {
      target: '2. a 5 MB upstream image re-hosted: one request, memory growth / size (median)',
      wanted: '< 2',
      measured:
        large === undefined
          ? undefined
          : `${figure(oneRequest, 2)} (largest ${figure(large.largestGrowthBytes / large.imageBytes, 2)})`,
      met: oneRequest === undefined ? undefined : oneRequest < 2,
    },
    {
      target: `2. the same, peak over ${large?.repeats ?? 'all the'} requests in a row / size`,
      wanted: '< 2',
      measured: figure(allOfThem, 2),
      met: allOfThem === undefined ? undefined : allOfThem < 2,
    },
  ];
}

function aloneTarget(report: ProxyReport): TargetRow {
  const medianOf = (setup: string) => report.alone.find((row) => row.setup === setup)?.medianMs;
  const direct = medianOf(SETUP.direct);
  const added = (setup: string) => {
    const median = medianOf(setup);
    return median === undefined || direct === undefined ? undefined : median - direct;
  };
  const measured = added(SETUP.passThrough);
  const floor = added(SETUP.bareNode);
  return {
    target: '3. one request alone, added at the median (pass-through)',
    wanted: '≤ 0.5 ms',
    measured: measured === undefined ? undefined : `${figure(measured, 3)} ms`,
    floor: figure(floor, 3),
    met: atMost(measured, 0.5),
    floorMet: atMost(floor, 0.5),
  };
}

function crowdTargets(crowd: readonly CrowdResult[] | string): TargetRow[] {
  const runs = typeof crowd === 'string' ? [] : crowd;
  const rowOf = (setup: string, run: CrowdResult['run']) =>
    runs.find((row) => row.setup === setup && row.run === run);
  return [SETUP.passThrough, SETUP.rehost, SETUP.bareFastify, SETUP.bareBilling].flatMap((setup) =>
    (['cold', 'warm'] as const).map((run) => {
      const row = rowOf(setup, run);
      const floor = rowOf(SETUP.bareNode, run);
      const ratios = crowdRatios(row, floor);
      const held = heldPerCallerKiB(row);
      const holdsMemory =
        run === 'cold' && setup !== SETUP.bareFastify && setup !== SETUP.bareBilling;
      return {
        target: `4. 1,000 callers, 2 s upstream, ${setup}, ${run}: p50 / p99 against the bare Node.js proxy's / errors${holdsMemory ? ' / held memory per caller' : ''}`,
        wanted: `≤ ${CROWD_LATENCY_RATIO} / ≤ ${CROWD_LATENCY_RATIO} / 0${holdsMemory ? ' / 30 KB' : ''}`,
        measured:
          row === undefined || ratios === undefined
            ? undefined
            : `${figure(row.result.p50Ms, 0)} / ${figure(row.result.p99Ms, 0)} ms: ${figure(ratios.p50, 3)} / ${figure(ratios.p99, 3)} / ${row.result.errors}${holdsMemory ? ` / ${figure(held, 1)} KiB` : ''}`,
        floor:
          floor === undefined
            ? undefined
            : `${figure(floor.result.p50Ms, 0)} / ${figure(floor.result.p99Ms, 0)} ms / ${floor.result.errors}`,
        met:
          row === undefined || ratios === undefined
            ? undefined
            : ratios.p50 <= CROWD_LATENCY_RATIO &&
              ratios.p99 <= CROWD_LATENCY_RATIO &&
              row.result.errors === 0 &&
              (!holdsMemory || (held !== undefined && held <= CROWD_HELD_KIB)),
      };
    }),
  );
}

function crowdRatios(
  row: CrowdResult | undefined,
  floor: CrowdResult | undefined,
): { p50: number; p99: number } | undefined {
  if (row === undefined || floor === undefined) return undefined;
  return {
    p50: row.result.p50Ms / floor.result.p50Ms,
    p99: row.result.p99Ms / floor.result.p99Ms,
  };
}

function heldPerCallerKiB(row: CrowdResult | undefined): number | undefined {
  return row?.heldRssBytes === undefined
    ? undefined
    : (row.heldRssBytes - row.idleRssBytes) / row.callers / 1024;
}

function servicesTargets(loads: readonly LoadRow[], manyTokens: number): TargetRow[] {
  return [
    SETUP.passThroughOnServices,
    SETUP.manyTokensOnServices(manyTokens),
    SETUP.rehostOnServices,
  ].map((setup) => {
    const perSecond = loadOf(loads, setup, 0)?.result.requestsPerSecond;
    return {
      target: `5. ${setup}`,
      wanted: '≥ 3,000 req/s',
      measured: perSecond === undefined ? undefined : `${figure(perSecond, 0)} req/s`,
      met: atLeast(perSecond, 3000),
    };
  });
}

function largestTarget(report: ProxyReport): TargetRow {
  const large = typeof report.large === 'string' ? undefined : report.large;
  const growth =
    large === undefined ? undefined : (large.peakRssBytes - large.idleRssBytes) / large.bodyBytes;
  return {
    target: '6. the largest legal request: peak memory growth / body',
    wanted: '≤ 2',
    measured: figure(growth, 2),
    met: atMost(growth, 2),
  };
}
