import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Resolves once `check` holds, asking again every `pollMs`; fails naming `what` after
 * `timeoutMs`. The one place where tests poll.
 */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  what: string,
  pollMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    await sleep(pollMs);
  }
}

/**
 * Lets `ms` pass doing nothing, for a test to prove that something does NOT happen later (a
 * second upstream call, a late bill). Absence has no event to wait for, so this bounded wait is
 * the proof; `reason` names what must stay absent. Wait first for every positive condition there
 * is, so that only the absence rests on time.
 */
export async function quietFor(ms: number, reason: string): Promise<void> {
  if (reason === '') throw new Error('quietFor needs the reason it proves absence');
  await sleep(ms);
}
