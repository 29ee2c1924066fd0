import type { TestContext } from 'node:test';
import type { LocalEngine } from '../../src/engine/local/local-engine.js';
import type { RenderPool } from '../../src/engine/local/render-pool.js';

/** Renders a local engine has sent to its worker pool, and those of them not finished yet. */
export interface Renders {
  started: number;
  running: number;
}

/**
 * Counts `engine`'s renders as its pool sees them, for the test's duration. `beforeRender`, when
 * given, runs before each render reaches the pool (with the image's index), and may hold it back.
 */
export function watchRenders(
  t: TestContext,
  engine: LocalEngine,
  beforeRender: (index: number) => Promise<void> = async () => {},
): Renders {
  // The pool is the engine's own: reached here only to see what work it holds, and when.
  const pool = (engine as unknown as { pool: RenderPool }).pool;
  const renderPng = pool.renderPng.bind(pool);
  const renders: Renders = { started: 0, running: 0 };
  t.mock.method(pool, 'renderPng', async (...args: Parameters<RenderPool['renderPng']>) => {
    await beforeRender(args[0].recipe.index);
    renders.started++;
    renders.running++;
    try {
      return await renderPng(...args);
    } finally {
      renders.running--;
    }
  });
  return renders;
}
