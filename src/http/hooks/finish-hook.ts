import type { HookHandlerDoneFunction } from 'fastify';

/**
 * Ends a callback-style hook with what `compute` gives: in the same turn when it is a value,
 * after the promise otherwise; a throw or a rejection goes to `done` as the hook's error. Lets
 * the hooks of the request path answer a remembered caller without a promise.
 */
export function finishHook<T>(
  compute: () => T | Promise<T>,
  use: (value: T) => void,
  done: HookHandlerDoneFunction,
): void {
  let value: T | Promise<T>;
  try {
    value = compute();
  } catch (error) {
    done(error as Error);
    return;
  }
  if (!(value instanceof Promise)) {
    use(value);
    done();
    return;
  }
  value.then((resolved) => {
    use(resolved);
    done();
  }, done);
}
