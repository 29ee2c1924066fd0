// Incremental streams hung up on at random moments (docs/admission.md): 1,000 runs per door, the
// rate at which a caller was billed more images than it parsed. A caller that closes its side
// reads all that was handed over; one that destroys its connection loses what reached it unread.
import { disagreements } from '../test/helpers/random-close.js';
import {
  type Cleanup,
  closeAtRandom,
  dashScopeDoor,
  type Door,
  localEngineDoor,
} from '../test/helpers/random-close-run.js';
import type { BenchRow } from './bench-row.js';

const RUNS = 1000;
const AT_ONCE = 8;

const DOORS: [string, (cleanup: Cleanup) => Promise<Door | undefined>][] = [
  ['local engine', localEngineDoor],
  ['DashScope upstream', (cleanup) => dashScopeDoor(cleanup, RUNS + 1)],
  ['DashScope upstream on PostgreSQL', (cleanup) => dashScopeDoor(cleanup, RUNS + 1, 'PostgreSQL')],
];

export default async function randomClose(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const [name, openDoor] of DOORS) {
    const closers: (() => unknown)[] = [];
    // The doors' closers take no arguments; a test's context would pass it.
    const cleanup: Cleanup = {
      after: (closer) => {
        if (closer !== undefined) closers.push(closer as () => unknown);
      },
    };
    try {
      const door = await openDoor(cleanup);
      if (door === undefined) continue;
      const { checks, billed, unsettled } = await closeAtRandom(cleanup, door, RUNS, AT_ONCE);
      const found = disagreements(checks);
      const over = found.overBilled;
      const parsed = checks.reduce((sum, check) => sum + check.stream.imagesParsed, 0);
      const overImages = over.reduce(
        (sum, { row, stream }) => sum + (row?.imagesBilled ?? 0) - stream.imagesParsed,
        0,
      );
      rows.push({
        name: `random close, ${name}: rows that disagree, runs under-billed`,
        value: found.badRows.length + found.underBilled.length,
        unit: 'per request',
        note: `${found.badRows.length} rows, ${found.underBilled.length} under-billed; ${overImages} images over-billed${unsettled ? '; some rows never final' : ''}`,
      });
      for (const how of ['half-close', 'destroy'] as const) {
        const runs = checks.filter((check) => check.stream.plan.how === how).length;
        const overBilled = over.filter((check) => check.stream.plan.how === how).length;
        rows.push({
          name: `random close, ${name}, ${how}: over-billed runs`,
          value: (overBilled / Math.max(1, runs)) * 1000,
          unit: 'per request',
          note: `${overBilled} of ${runs} runs, per 1,000; ${parsed} images parsed, ${billed} billed in all`,
        });
      }
    } finally {
      for (const closer of closers.reverse()) await closer();
    }
  }
  return rows;
}
