import { collectDefaultMetrics, Registry } from 'prom-client';

let shared: Registry | undefined;

/**
 * Node's own metrics (CPU, memory, event-loop lag, garbage collection). They describe the
 * process, so there is one set however many gateways it runs (tests run many); each gateway's
 * registry is merged with it at scrape time.
 */
export function processMetrics(): Registry {
  if (shared === undefined) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
  }
  return shared;
}
