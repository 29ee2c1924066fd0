import { execFileSync } from 'node:child_process';

/** The ids of the processes whose parent is `pid` (procps `ps`, as on Linux). */
export function childPidsOf(pid: number): number[] {
  let listing: string;
  try {
    listing = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  } catch {
    // ps exits 1 when it lists nothing.
    return [];
  }
  return listing
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((child) => Number.isInteger(child) && child > 0);
}

/** Whether a process with this id exists: signal 0 checks without sending anything. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}
