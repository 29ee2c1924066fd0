import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChannelSnapshot } from '../../src/metrics/channel-snapshot.js';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics.js';
import type { FinishedRequest } from '../../src/metrics/finished-request.js';
import { parseSamples, samplesOf } from './prometheus-text.js';

const generated: FinishedRequest = {
  route: '/vendor/generate',
  method: 'POST',
  status: 200,
  code: undefined,
  model: 'model-x',
  channel: 'primary',
  imagesDelivered: 2,
  imagesBilled: 2,
  times: { totalMs: 1530, gatewayMs: 30, upstreamMs: 1500, storageMs: 12, queueMs: undefined },
};

async function scraped(metrics: GatewayMetrics) {
  return parseSamples(await metrics.scrape());
}

describe('GatewayMetrics', () => {
  it('counts requests by route, method, model, status and code, and the images', async () => {
    const metrics = new GatewayMetrics();
    metrics.requestFinished(generated);
    metrics.requestFinished(generated);
    metrics.requestFinished({
      ...generated,
      status: 429,
      code: 'Throttling.RateQuota',
      channel: undefined,
      imagesDelivered: 0,
      imagesBilled: 0,
      times: {
        totalMs: 4,
        gatewayMs: 4,
        upstreamMs: undefined,
        storageMs: undefined,
        queueMs: undefined,
      },
    });
    metrics.requestFinished({
      route: undefined,
      method: 'GET',
      status: 404,
      code: 'NotFound',
      model: undefined,
      channel: undefined,
      imagesDelivered: 0,
      imagesBilled: 0,
      times: undefined,
    });
    const samples = await scraped(metrics);
    assert.deepEqual(samplesOf(samples, 'imagegate_requests_total'), [
      {
        labels: {
          route: '/vendor/generate',
          method: 'POST',
          model: 'model-x',
          status: '200',
          code: '',
        },
        value: 2,
      },
      {
        labels: {
          route: '/vendor/generate',
          method: 'POST',
          model: 'model-x',
          status: '429',
          code: 'Throttling.RateQuota',
        },
        value: 1,
      },
      {
        labels: { route: '', method: 'GET', model: '', status: '404', code: 'NotFound' },
        value: 1,
      },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_images_delivered_total'), [
      { labels: { model: 'model-x' }, value: 4 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_images_billed_total'), [
      { labels: { model: 'model-x' }, value: 4 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_gateway_overhead_seconds_count'), [
      { labels: { model: 'model-x' }, value: 3 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_gateway_overhead_seconds_sum'), [
      { labels: { model: 'model-x' }, value: 0.064 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_upstream_latency_seconds_count'), [
      { labels: { model: 'model-x', channel: 'primary' }, value: 2 },
    ]);
    assert.deepEqual(
      samplesOf(samples, 'imagegate_upstream_latency_seconds_bucket', { le: '1' }).map(
        ({ value }) => value,
      ),
      [0],
    );
    assert.deepEqual(
      samplesOf(samples, 'imagegate_upstream_latency_seconds_bucket', { le: '2.5' }).map(
        ({ value }) => value,
      ),
      [2],
    );
  });

  it('reads channel state and the ledger queue at scrape time, following a reload', async () => {
    const metrics = new GatewayMetrics();
    let channels: ChannelSnapshot[] = [
      { name: 'a', health: 'available', stats: { attempts: 5, failures: 1, inFlight: 2 } },
      { name: 'b', health: 'open', stats: { attempts: 3, failures: 3, inFlight: 0 } },
    ];
    let pending = 7;
    metrics.observeChannels(() => channels);
    metrics.observeLedgerQueue(() => pending);

    let samples = await scraped(metrics);
    assert.deepEqual(samplesOf(samples, 'imagegate_channel_attempts_total'), [
      { labels: { channel: 'a' }, value: 5 },
      { labels: { channel: 'b' }, value: 3 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_channel_failures_total'), [
      { labels: { channel: 'a' }, value: 1 },
      { labels: { channel: 'b' }, value: 3 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_channel_in_flight'), [
      { labels: { channel: 'a' }, value: 2 },
      { labels: { channel: 'b' }, value: 0 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_channel_state', { channel: 'b' }), [
      { labels: { channel: 'b', state: 'available' }, value: 0 },
      { labels: { channel: 'b', state: 'open' }, value: 1 },
      { labels: { channel: 'b', state: 'half-open' }, value: 0 },
      { labels: { channel: 'b', state: 'key-rejected' }, value: 0 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_ledger_queue_rows'), [{ labels: {}, value: 7 }]);

    channels = [
      { name: 'b', health: 'key-rejected', stats: { attempts: 4, failures: 4, inFlight: 0 } },
    ];
    pending = 0;
    samples = await scraped(metrics);
    assert.deepEqual(samplesOf(samples, 'imagegate_channel_attempts_total'), [
      { labels: { channel: 'b' }, value: 4 },
    ]);
    assert.deepEqual(
      samplesOf(samples, 'imagegate_channel_state', { state: 'key-rejected' }).map(
        ({ value }) => value,
      ),
      [1],
    );
    assert.deepEqual(samplesOf(samples, 'imagegate_ledger_queue_rows'), [{ labels: {}, value: 0 }]);
  });

  it('reads image fetches and render jobs from their owners at scrape time', async () => {
    const metrics = new GatewayMetrics();
    let samples = await scraped(metrics);
    for (const name of [
      'imagegate_image_fetches_in_flight',
      'imagegate_image_fetches_waiting',
      'imagegate_render_jobs_running',
      'imagegate_render_jobs_waiting',
    ])
      assert.deepEqual(samplesOf(samples, name), [{ labels: {}, value: 0 }], name);

    let fetches = { running: 32, waiting: 5 };
    let jobs = { running: 2, waiting: 16 };
    metrics.observeImageFetches(() => fetches);
    metrics.observeRenderJobs(() => jobs);
    samples = await scraped(metrics);
    assert.deepEqual(samplesOf(samples, 'imagegate_image_fetches_in_flight'), [
      { labels: {}, value: 32 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_image_fetches_waiting'), [
      { labels: {}, value: 5 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_render_jobs_running'), [
      { labels: {}, value: 2 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_render_jobs_waiting'), [
      { labels: {}, value: 16 },
    ]);

    fetches = { running: 0, waiting: 0 };
    jobs = { running: 1, waiting: 0 };
    samples = await scraped(metrics);
    assert.deepEqual(samplesOf(samples, 'imagegate_image_fetches_in_flight'), [
      { labels: {}, value: 0 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_render_jobs_running'), [
      { labels: {}, value: 1 },
    ]);
  });

  it('shows the levels other modules move', async () => {
    const metrics = new GatewayMetrics();
    metrics.inFlightRequests.inc();
    metrics.inFlightRequests.inc();
    metrics.inFlightRequests.dec();
    metrics.inFlightBodyBytes.inc(4096);
    metrics.inFlightBodyBytes.dec(1024);
    metrics.eventStreamsOpen.inc();
    metrics.uploadsInFlight.set(3);
    const samples = await scraped(metrics);
    assert.deepEqual(samplesOf(samples, 'imagegate_in_flight_requests'), [
      { labels: {}, value: 1 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_in_flight_body_bytes'), [
      { labels: {}, value: 3072 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_event_streams_open'), [
      { labels: {}, value: 1 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_uploads_in_flight'), [{ labels: {}, value: 3 }]);
  });

  it('keeps each gateway apart and shares the process metrics, event-loop lag included', async () => {
    const first = new GatewayMetrics();
    const second = new GatewayMetrics();
    first.requestFinished(generated);
    const [firstSamples, secondSamples] = await Promise.all([scraped(first), scraped(second)]);
    assert.equal(samplesOf(firstSamples, 'imagegate_requests_total').length, 1);
    assert.deepEqual(samplesOf(secondSamples, 'imagegate_requests_total'), []);
    for (const samples of [firstSamples, secondSamples]) {
      assert.equal(samplesOf(samples, 'nodejs_eventloop_lag_seconds').length, 1);
      assert.equal(samplesOf(samples, 'process_cpu_user_seconds_total').length, 1);
    }
    assert.match(first.contentType, /^text\/plain; version=0\.0\.4/);
  });
});
