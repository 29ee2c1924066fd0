import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { disagreements, neverArrived } from '../helpers/random-close.js';
import {
  closeAtRandom,
  dashScopeDoor,
  type Door,
  localEngineDoor,
} from '../helpers/random-close-run.js';

// docs/admission.md, incremental streams: each image is handed to the caller's connection, then
// billed; a caller who hangs up at any moment is billed exactly the image events handed to it.
// 200 runs per door, 0 mismatches allowed among those that can read all that was handed over:
// the order leaves no race there, so one mismatch is a defect; bill-then-send, the order before,
// over-billed about 3 in 10 such runs on a DashScope upstream.

const RUNS = 200;
const AT_ONCE = 8;

const DOORS: [string, (t: TestContext) => Promise<Door>][] = [
  ['the local engine', localEngineDoor],
  ['a DashScope upstream', (t) => dashScopeDoor(t, RUNS + 1)],
];

describe('incremental streams closed by their callers at random moments', () => {
  for (const [name, openDoor] of DOORS) {
    it(`bills exactly the image events handed to each caller, on ${name}`, async (t) => {
      const { checks, billed, unsettled } = await closeAtRandom(
        t,
        await openDoor(t),
        RUNS,
        AT_ONCE,
      );
      const found = disagreements(checks);
      const closedBy = (how: string) => checks.filter((check) => check.stream.plan.how === how);
      const overBy = (how: string) =>
        found.overBilled.filter((check) => check.stream.plan.how === how).length;
      const parsed = checks.reduce((sum, check) => sum + check.stream.imagesParsed, 0);
      t.diagnostic(
        `${RUNS} runs: over-billed ${overBy('half-close')} of ${closedBy('half-close').length} ` +
          `half-closed, ${overBy('destroy')} of ${closedBy('destroy').length} destroyed; ` +
          `${found.underBilled.length} under-billed, ${found.badRows.length} rows that disagree; ` +
          `${parsed} images received, ${billed} billed; ` +
          `${checks.filter((check) => neverArrived(check.row, check.stream)).length} without a row`,
      );
      for (const { stream, row } of [...found.badRows, ...found.overBilled].slice(0, 8))
        t.diagnostic(
          `parsed ${stream.imagesParsed} (${JSON.stringify(stream.plan)}): row ${row?.status} ` +
            `${row?.errorCode} received ${row?.imagesReceived} delivered ${row?.imagesDelivered} ` +
            `billed ${row?.imagesBilled}`,
        );
      assert.equal(unsettled, false, 'every stream that got an answer has its final row');
      // A caller that closes its side reads every byte the gateway handed over: billed must be
      // exactly what it parsed. One that destroys its connection loses what reaches its socket
      // between its last read and the close: at most the one image in flight, handed over, and
      // so billed.
      assert.deepEqual(
        [overBy('half-close'), found.underBilled.length, found.badRows.length],
        [0, 0, 0],
      );
      const overByMore = found.overBilled.filter(
        ({ row, stream }) => (row?.imagesBilled ?? 0) > stream.imagesParsed + 1,
      );
      assert.deepEqual(overByMore, [], 'never more than the image in flight');
      assert.equal(billed - found.overBilled.length, parsed, "the token's quota says the same");
    });
  }
});
