import { useEffect, useState } from 'preact/hooks';
import { messageOf } from '../api';

export interface Polled<T> {
  value: T | undefined;
  problem: string | undefined;
  refresh: () => void;
}

/** Loads `load()` now and, with `everyMs`, again on that period while the page is shown. */
export function usePolled<T>(load: () => Promise<T>, everyMs?: number, key = ''): Polled<T> {
  const [value, setValue] = useState<T | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    load()
      .then((loaded) => {
        if (!current) return;
        setValue(loaded);
        setProblem(undefined);
      })
      .catch((error: unknown) => current && setProblem(messageOf(error)));
    const timer =
      everyMs === undefined ? undefined : setTimeout(() => setRound((n) => n + 1), everyMs);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [round, key]);
  return { value, problem, refresh: () => setRound((n) => n + 1) };
}
