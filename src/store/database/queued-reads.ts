import type { Compilable } from 'kysely';
import { GatewayError } from '../../errors/gateway-error.js';
import { TurnQueue } from '../../support/turn-queue.js';
import type { LongReads, Read, ReadRunner } from './long-reads.js';

/** One lane of long reads: how many run at once, how many may wait, and what a refusal says. */
export interface ReadLane {
  /** The refusal's message begins with it: "task listings are busy". */
  busy: string;
  /** Reads under way at once. */
  running: number;
  /** Reads waiting behind those; one more is refused with 503 Overloaded. */
  waiting: number;
}

/** Refused at once: everyone in the queue can try again in a moment. */
const RETRY_AFTER_S = '1';

/**
 * A lane of long reads with turns of its own, in front of where they run (a worker thread on
 * SQLite, the pool on PostgreSQL): at most `lane.running` at once, so that long reads never take
 * more than their share of a thread or of the pool from the request path; `lane.waiting` more in
 * arrival order; one more is refused with 503 `Overloaded` and `Retry-After`. A read whose
 * caller left while it waited is dropped; at close, the reads still waiting are refused.
 */
export class QueuedReads implements LongReads {
  private readonly turns: TurnQueue;
  private closed = false;

  constructor(
    private readonly inner: ReadRunner,
    lane: ReadLane,
  ) {
    this.turns = new TurnQueue({
      running: lane.running,
      waiting: lane.waiting,
      refusal: () =>
        new GatewayError(
          'Overloaded',
          `${lane.busy}: ${lane.running} running and ${lane.waiting} waiting, the most this node queues; retry shortly`,
          { 'Retry-After': RETRY_AFTER_S },
        ),
    });
  }

  all<Row>(query: Compilable<Row>, signal?: AbortSignal): Promise<Row[]> {
    return this.inOneTurn((read) => read(query), signal);
  }

  async inOneTurn<T>(work: (read: Read) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.closed) throw shuttingDown();
    const turn = await this.turns.take(signal);
    try {
      return await work((query) => this.inner.all(query));
    } finally {
      turn.release();
    }
  }

  /** Refuses the reads still waiting, then closes where they run. */
  async close(): Promise<void> {
    this.closed = true;
    this.turns.refuseWaiting(shuttingDown());
    await this.inner.close();
  }
}

/** The answer to a read refused or given up because the gateway is closing. */
export function shuttingDown(): GatewayError {
  return new GatewayError('Overloaded', 'the gateway is shutting down; retry shortly', {
    'Retry-After': RETRY_AFTER_S,
  });
}
