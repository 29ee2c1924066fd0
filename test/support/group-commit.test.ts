import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit } from '../../src/support/group-commit.js';

/** An executor whose groups wait until the test lets them commit, recording each group. */
function gatedExecutor(fail: (items: readonly number[]) => Error | undefined = () => undefined) {
  const groups: number[][] = [];
  const gates: (() => void)[] = [];
  let open = false;
  return {
    groups,
    /** Lets the oldest waiting group commit. */
    commitNext: () => gates.shift()?.(),
    /** Lets every group, waiting or to come, commit without waiting. */
    openAll: () => {
      open = true;
      for (const gate of gates.splice(0)) gate();
    },
    execute: async (items: readonly number[]) => {
      groups.push([...items]);
      if (!open) await new Promise<void>((resolve) => gates.push(resolve));
      const error = fail(items);
      if (error !== undefined) throw error;
      return items.map((item) => item * 10);
    },
  };
}

/** Lets queued microtasks and promise reactions run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('group commit', () => {
  it('sends what arrives in one turn of the event loop together, then groups those that arrive while it is in flight', async () => {
    const executor = gatedExecutor();
    const group = new GroupCommit({
      maxSize: 10,
      execute: executor.execute,
      failsEveryone: () => false,
    });
    const answered: number[] = [];
    const submit = (item: number) => group.submit(item).then((result) => answered.push(result));
    const first = [0, 1].map(submit);
    assert.deepEqual(executor.groups, [], 'nothing goes before the turn ends');
    await settle();
    assert.deepEqual(executor.groups, [[0, 1]], "nothing in flight: one turn's items go together");
    const rest = [2, 3, 4].map(submit);
    await settle();
    assert.deepEqual(executor.groups, [[0, 1]], 'the others wait for the transaction in flight');
    assert.deepEqual(answered, [], 'no caller is answered before its commit');
    executor.commitNext();
    await Promise.all(first);
    await settle();
    assert.deepEqual(executor.groups, [
      [0, 1],
      [2, 3, 4],
    ]);
    assert.deepEqual(answered, [0, 10], 'only the committed group is answered');
    executor.commitNext();
    await Promise.all(rest);
    assert.deepEqual(answered, [0, 10, 20, 30, 40]);
  });

  it('bounds the size of a group', async () => {
    const executor = gatedExecutor();
    const group = new GroupCommit({
      maxSize: 2,
      execute: executor.execute,
      failsEveryone: () => false,
    });
    const all = [1, 2, 3, 4, 5].map((item) => group.submit(item));
    for (let i = 0; i < 3; i++) {
      await settle();
      executor.commitNext();
    }
    assert.deepEqual(await Promise.all(all), [10, 20, 30, 40, 50]);
    assert.deepEqual(executor.groups, [[1, 2], [3, 4], [5]]);
  });

  it('tries a failed group again in halves, so one bad item fails alone', async () => {
    const bad = new Error('bad item');
    const executor = gatedExecutor((items) => (items.includes(3) ? bad : undefined));
    const group = new GroupCommit({
      maxSize: 10,
      execute: executor.execute,
      failsEveryone: () => false,
    });
    const first = group.submit(0);
    await settle();
    const results = [1, 2, 3, 4].map((item) =>
      group.submit(item).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      ),
    );
    executor.openAll();
    await first;
    assert.deepEqual(await Promise.all(results), [
      { result: 10 },
      { result: 20 },
      { error: bad },
      { result: 40 },
    ]);
    assert.deepEqual(executor.groups, [[0], [1, 2, 3, 4], [1, 2], [3, 4], [3], [4]]);
  });

  it('fails every item of a group together when the failure is everyone’s', async () => {
    const down = new Error('database unreachable');
    const executor = gatedExecutor((items) => (items.length > 1 ? down : undefined));
    const group = new GroupCommit({
      maxSize: 10,
      execute: executor.execute,
      failsEveryone: (error) => error === down,
    });
    const first = group.submit(0);
    await settle();
    const failed = [1, 2, 3].map((item) => group.submit(item).catch((error: unknown) => error));
    executor.openAll();
    await first;
    assert.deepEqual(await Promise.all(failed), [down, down, down]);
    assert.deepEqual(executor.groups, [[0], [1, 2, 3]], 'not tried again item by item');
  });
});
