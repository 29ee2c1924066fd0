/**
 * A level that others move as things start and end (requests in flight, body bytes held, a
 * queue's depth) and that GET /metrics shows as it stands at the scrape.
 */
export interface LevelGauge {
  inc(amount?: number): void;
  dec(amount?: number): void;
  set(value: number): void;
}
