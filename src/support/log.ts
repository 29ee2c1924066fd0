/**
 * The part of a pino logger that the gateway's modules write to; Fastify's `app.log` fits it.
 * Fields never carry tokens, keys or image data.
 */
export interface Log {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export const silentLog: Log = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * A warning said at most once per `intervalMs`: a failure that repeats every request or every
 * retry (an unreachable Redis, a failing background job) is reported, not repeated.
 */
export function warnAtMostEvery(
  log: Log,
  intervalMs: number,
  now: () => number = Date.now,
): (fields: object, message: string) => void {
  let lastAt = Number.NEGATIVE_INFINITY;
  return (fields, message) => {
    const at = now();
    if (at - lastAt < intervalMs) return;
    lastAt = at;
    log.warn(fields, message);
  };
}

type Level = keyof Log;
type Entry = { level: Level; fields: object; message: string };

/** Entries kept until the destination is known; beyond this, the oldest are dropped. */
const MAX_EARLY_ENTRIES = 100;

/**
 * A log whose destination is set later: services open before the app whose logger they use.
 * What is said before then (Redis unreachable at start-up) is kept and passed on once it is set.
 */
export class DeferredLog implements Log {
  private destination: Log | undefined;
  private early: Entry[] = [];

  set target(destination: Log) {
    this.destination = destination;
    for (const entry of this.early) destination[entry.level](entry.fields, entry.message);
    this.early = [];
  }

  info(fields: object, message: string): void {
    this.write({ level: 'info', fields, message });
  }

  warn(fields: object, message: string): void {
    this.write({ level: 'warn', fields, message });
  }

  error(fields: object, message: string): void {
    this.write({ level: 'error', fields, message });
  }

  private write(entry: Entry): void {
    if (this.destination !== undefined) {
      this.destination[entry.level](entry.fields, entry.message);
      return;
    }
    this.early.push(entry);
    if (this.early.length > MAX_EARLY_ENTRIES) this.early.shift();
  }
}
