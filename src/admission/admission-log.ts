/** Where admission reports trouble it absorbs (a limiter down, a background sweep failing). */
export interface AdmissionLog {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export const silentLog: AdmissionLog = { warn: () => undefined, error: () => undefined };

type Entry = { level: 'warn' | 'error'; details: object; message: string };

/** Entries kept until the destination is known; beyond this, the oldest are dropped. */
const MAX_EARLY_ENTRIES = 100;

/**
 * A log whose destination is set later: admission opens before the app whose logger it uses.
 * What is said before then (Redis unreachable at start-up) is kept and passed on once it is set.
 */
export class DeferredLog implements AdmissionLog {
  private destination: AdmissionLog | undefined;
  private early: Entry[] = [];

  set target(destination: AdmissionLog) {
    this.destination = destination;
    for (const entry of this.early) destination[entry.level](entry.details, entry.message);
    this.early = [];
  }

  warn(details: object, message: string): void {
    this.write({ level: 'warn', details, message });
  }

  error(details: object, message: string): void {
    this.write({ level: 'error', details, message });
  }

  private write(entry: Entry): void {
    if (this.destination !== undefined) {
      this.destination[entry.level](entry.details, entry.message);
      return;
    }
    this.early.push(entry);
    if (this.early.length > MAX_EARLY_ENTRIES) this.early.shift();
  }
}
