import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import {
  RequestPathCounter,
  RequestPathHistogram,
} from '../../src/metrics/request-path-metrics.js';
import { parseSamples } from './prometheus-text.js';

// The request path's own counters and histograms must read, once scraped, exactly as prom-client
// would have written the same observations.

const BOUNDS = [0.005, 0.01, 0.25, 1, 2.5];
const ODD_VALUES = ['plain', '', 'quote " back\\slash', 'line\nbreak', 'ünï'];

/** The samples of `text` with their labels in name order, sorted: the order of lines is free. */
function sorted(text: string) {
  return parseSamples(text)
    .map((sample) => ({
      ...sample,
      labels: Object.fromEntries(
        Object.entries(sample.labels).sort(([a], [b]) => a.localeCompare(b)),
      ),
    }))
    .sort((a, b) =>
      `${a.name}${JSON.stringify(a.labels)}`.localeCompare(`${b.name}${JSON.stringify(b.labels)}`),
    );
}

describe('request path metrics', () => {
  it('write a counter as prom-client does, label values escaped', async () => {
    const registry = new Registry();
    const reference = new Counter({
      name: 'test_requests_total',
      help: 'Requests "counted"\nhere.',
      labelNames: ['route', 'code'],
      registers: [registry],
    });
    const ours = new RequestPathCounter('test_requests_total', 'Requests "counted"\nhere.', [
      'route',
      'code',
    ]);
    for (const [index, value] of ODD_VALUES.entries()) {
      reference.inc({ route: value, code: String(index) }, index + 1);
      ours.inc([value, String(index)], index + 1);
      reference.inc({ route: value, code: String(index) });
      ours.inc([value, String(index)]);
    }
    const expected = await registry.metrics();
    assert.deepEqual(sorted(ours.text()), sorted(expected));
    assert.deepEqual(ours.text().split('\n').slice(0, 2), expected.split('\n').slice(0, 2));
  });

  it('write a histogram as prom-client does: cumulative buckets, +Inf, sum and count', async () => {
    const registry = new Registry();
    const reference = new Histogram({
      name: 'test_seconds',
      help: 'Seconds.',
      labelNames: ['model', 'channel'],
      buckets: BOUNDS,
      registers: [registry],
    });
    const ours = new RequestPathHistogram('test_seconds', 'Seconds.', ['model', 'channel'], BOUNDS);
    const observations = [0, 0.005, 0.0051, 0.01, 0.3, 1, 2.5, 2.6, 1000, 0.25];
    for (const [index, value] of observations.entries()) {
      const model = ODD_VALUES[index % ODD_VALUES.length] as string;
      reference.observe({ model, channel: 'b' }, value);
      ours.observe([model, 'b'], value);
    }
    assert.deepEqual(sorted(ours.text()), sorted(await registry.metrics()));
  });

  it('write only HELP and TYPE before anything was observed', async () => {
    const registry = new Registry();
    new Histogram({
      name: 'empty_seconds',
      help: 'None yet.',
      buckets: BOUNDS,
      registers: [registry],
    });
    const ours = new RequestPathHistogram('empty_seconds', 'None yet.', [], BOUNDS);
    assert.equal(ours.text(), '# HELP empty_seconds None yet.\n# TYPE empty_seconds histogram');
    assert.deepEqual(parseSamples(ours.text()), []);
  });
});
