// What the kernel counts for a process, read from /proc: the bench measures processes it did not
// write (nginx) the same way as the gateway.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

const TICKS_PER_SECOND = clockTicks();

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** The fields of /proc/<pid>/stat after the command name, which may itself hold spaces. */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU time the process has used so far, user and system, all its threads: utime + stime. */
export function cpuMs(pid: number): number {
  const fields = statFields(pid);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU time of the process's main thread alone: with cpuMs, it tells the event loop's work from
 * what libuv's thread pool (file system, DNS) and V8's helper threads (GC) do beside it.
 */
export function mainThreadCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU time used so far by every process named `command` (as /proc/<pid>/comm gives it, e.g.
 * `postgres`, `redis-server`), all of their threads; a process that exits between two readings
 * takes its time with it.
 */
export function cpuMsOfCommand(command: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== command) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
    } catch {
      // it exited while we looked
    }
  }
  return total;
}

/**
 * Connections the kernel turned away since boot because a listening socket's queue of accepted
 * connections was full (TcpExt ListenOverflows, machine-wide): each is a SYN its client sends again
 * a second later, a second that wrk does not count, as its clock starts once connected. Undefined
 * where /proc/net/netstat does not say.
 */
export function listenOverflows(): number | undefined {
  let netstat: string;
  try {
    netstat = readFileSync('/proc/net/netstat', 'utf8');
  } catch {
    return undefined;
  }
  return listenOverflowsIn(netstat);
}

/** ListenOverflows from the text of /proc/net/netstat: a line of names, then one of values. */
export function listenOverflowsIn(netstat: string): number | undefined {
  const lines = netstat.split('\n');
  for (let index = 0; index + 1 < lines.length; index++) {
    const names = (lines[index] as string).split(' ');
    const values = (lines[index + 1] as string).split(' ');
    if (names[0] !== 'TcpExt:' || values[0] !== 'TcpExt:') continue;
    const column = names.indexOf('ListenOverflows');
    return column < 0 ? undefined : Number(values[column]);
  }
  return undefined;
}

/** Resident set size now (VmRSS). */
export function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]) * 1024;
}

/**
 * The highest resident set size the process has had (VmHWM): catches a peak shorter than any
 * sampling interval, when the process never went that high before.
 */
export function peakRssBytes(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]) * 1024;
}

/** The processes whose parent is `pid` (nginx's workers under its master). */
export function childPids(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((candidate) => {
      try {
        return Number(statFields(candidate)[1]) === pid;
      } catch {
        return false; // it exited while we looked
      }
    });
}

/** Samples a process's RSS until stopped; `stop` returns the highest value seen. */
export function sampleRss(pid: number, intervalMs: number): { stop(): number } {
  let peak = rssBytes(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssBytes(pid));
    } catch {
      // the process is gone; keep the peak seen so far
    }
  }, intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      return peak;
    },
  };
}

/** The 1-, 5- and 15-minute load averages, as `uptime` prints them. */
export function loadAverageText(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
}
