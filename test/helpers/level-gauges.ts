import assert from 'node:assert/strict';
import { eventually } from '../faults/fault-rig.js';
import type { GaugeReader } from './metrics-gauges.js';

/** The gateway's gauges that are states rather than levels something holds and gives back. */
const STATE_GAUGES = new Set(['imagegate_channel_state']);

/**
 * Every `imagegate_*` gauge that counts what requests and tasks hold (requests, body bytes, URL
 * fetches, render jobs, streams, uploads, channel attempts, ledger rows), by name: a gauge added
 * later is included without being listed here.
 */
export function levelGauges(gauges: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(gauges).filter(
      ([name]) => name.startsWith('imagegate_') && !STATE_GAUGES.has(name),
    ),
  );
}

/**
 * Polls GET /metrics until `holds` is true of the level gauges, and returns them as they then
 * stood; after `waitMs`, returns them as they stand without.
 */
async function levelsOnceTrue(
  gateway: GaugeReader,
  holds: (levels: Record<string, number>) => boolean,
  waitMs: number,
): Promise<Record<string, number>> {
  let levels: Record<string, number> = {};
  const read = async () => {
    levels = levelGauges(await gateway.gauges());
    return holds(levels);
  };
  await eventually(read, waitMs, 'the gauges').catch(() => undefined);
  return levels;
}

/** Polls GET /metrics until `holds` is true of the level gauges; fails with them after `waitMs`. */
export async function waitForLevels(
  gateway: GaugeReader,
  holds: (levels: Record<string, number>) => boolean,
  what: string,
  waitMs = 30_000,
): Promise<Record<string, number>> {
  const levels = await levelsOnceTrue(gateway, holds, waitMs);
  assert.ok(
    holds(levels),
    `${what}, within ${waitMs} ms; the gauges stood at ${JSON.stringify(levels)}`,
  );
  return levels;
}

/** Waits until every level gauge reads 0, and fails naming those that did not. */
export async function assertLevelsBackToZero(gateway: GaugeReader, waitMs = 30_000): Promise<void> {
  const levels = await levelsOnceTrue(
    gateway,
    (now) => Object.values(now).every((value) => value === 0),
    waitMs,
  );
  assert.ok(Object.keys(levels).length >= 10, `the level gauges: ${JSON.stringify(levels)}`);
  assert.deepEqual(levels, Object.fromEntries(Object.keys(levels).map((name) => [name, 0])));
}
