import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Admission, Settled, Settlement } from '../../src/admission/admission.js';
import type { RowLabels } from '../../src/ledger/row-labels.js';
import { billedRow } from '../helpers/row-labels.js';
import type { ReloadableRouter } from '../../src/channels/reloadable-router.js';
import { GenerationPipeline } from '../../src/generation/generation-pipeline.js';
import { shapeResponse } from '../../src/generation/response-shape.js';
import { validateRequest } from '../../src/validate/validate-request.js';
import { type FakeDashScope, startFakeDashScope } from '../fixtures/fake-dashscope.js';
import {
  channels,
  MODEL_A,
  requestBody,
  routerFor,
  temporaryStorage,
} from '../channels/channel-fixtures.js';

function labels(requestId: string): RowLabels {
  return {
    rowId: `row-${requestId}`,
    requestId,
    receivedAt: Date.now(),
    tokenId: 't',
    account: 'a',
    frontDoor: 'dashscope',
    workspace: undefined,
  };
}

/** A settlement that bills: what a ticket answers when every fence held. */
const BILLED: Settled = { outcome: 'billed', row: billedRow('t', 0) };
const NOTHING_BILLED = { imagesDelivered: 0, imagesBilled: 0, costMicros: 0 };

describe('billing what the upstream produced', () => {
  let fake: FakeDashScope;
  let storage: Awaited<ReturnType<typeof temporaryStorage>>;
  let router: ReloadableRouter;

  before(async () => {
    [fake, storage] = await Promise.all([startFakeDashScope(), temporaryStorage()]);
    router = routerFor(
      channels([
        { name: 'ds-primary', type: 'dashscope', base_url: fake.url, api_key: fake.apiKey },
      ]),
      { storage },
    );
  });
  after(async () => {
    await router.close();
    await Promise.all([fake.close(), storage.dispose()]);
  });

  it('settles with the images the upstream made, not the requested n, and records the channel', async () => {
    const settlements: Settlement[] = [];
    const reserved: number[] = [];
    const admission: Admission = {
      async admit(request) {
        reserved.push(request.maxImages);
        return {
          settle: async (settlement) => {
            settlements.push(settlement);
            return BILLED;
          },
          billDelivered: async () => assert.fail('not an incremental stream'),
          release: async () => NOTHING_BILLED,
        };
      },
    };
    const pipeline = new GenerationPipeline({
      inputs: { load: async () => [] },
      admission,
      engine: router,
      results: storage.results,
    });
    fake.script({ kind: 'succeed', images: 3, imageCount: 3 });
    const request = validateRequest(requestBody(MODEL_A, { enable_sequential: true }));
    const generation = await pipeline.generate(request, {
      requestId: 'billing-1',
      principal: { tokenId: 't', account: 'a', admin: false, issuer: 'gateway' },
      signal: new AbortController().signal,
      labels: labels('billing-1'),
    });
    assert.ok(generation.ok);
    const { result } = generation;
    assert.deepEqual(reserved, [12]);
    assert.equal(settlements.length, 1);
    assert.equal(settlements[0]?.imagesDelivered, 3);
    assert.equal(settlements[0]?.imagesReported, 3);
    assert.equal(settlements[0]?.channel, 'ds-primary');
    assert.equal(typeof settlements[0]?.upstreamMs, 'number');
    assert.ok(result.imageUrls.every((url) => url.startsWith('http://gateway.test/images/')));
    const body = shapeResponse(request, result, 'billing-1');
    assert.equal(body.usage.image_count, 3);
    assert.ok('size' in body.usage);
    assert.equal(body.usage.size, '96*64', 'the size the upstream reports');
    assert.ok('input_tokens' in body.usage);
    assert.deepEqual(
      [body.usage.input_tokens, body.usage.output_tokens],
      [12, 34],
      'the upstream token counts',
    );
  });

  it('releases a failed request and answers an outcome naming the channel that failed, for its ledger row', async () => {
    let released = 0;
    const admission: Admission = {
      async admit() {
        return {
          settle: async () => assert.fail('nothing to settle'),
          billDelivered: async () => assert.fail('not an incremental stream'),
          release: async () => {
            released++;
            return NOTHING_BILLED;
          },
        };
      },
    };
    const pipeline = new GenerationPipeline({
      inputs: { load: async () => [] },
      admission,
      engine: router,
      results: storage.results,
    });
    fake.script({ kind: 'error', status: 500, code: 'InternalError', message: 'broke' });
    const generation = await pipeline.generate(validateRequest(requestBody(MODEL_A)), {
      requestId: 'billing-2',
      principal: { tokenId: 't', account: 'a', admin: false, issuer: 'gateway' },
      signal: new AbortController().signal,
      labels: labels('billing-2'),
    });
    assert.equal(generation.ok, false);
    assert.equal((generation as { error: { code?: string } }).error.code, 'UpstreamError');
    assert.equal(released, 1);
    assert.equal(generation.outcome.channel, 'ds-primary');
    assert.equal(typeof generation.outcome.upstreamMs, 'number');
    assert.deepEqual([generation.outcome.imagesDelivered, generation.outcome.imagesBilled], [0, 0]);
  });

  it('delivers and bills at most n when the upstream sends more, recording the extras', async () => {
    const settlements: Settlement[] = [];
    const admission: Admission = {
      async admit() {
        return {
          settle: async (settlement) => {
            settlements.push(settlement);
            return BILLED;
          },
          billDelivered: async () => assert.fail('not an incremental stream'),
          release: async () => assert.fail('nothing to release'),
        };
      },
    };
    const pipeline = new GenerationPipeline({
      inputs: { load: async () => [] },
      admission,
      engine: router,
      results: storage.results,
    });
    fake.script({ kind: 'succeed', images: 3, imageCount: 3 });
    const request = validateRequest(requestBody(MODEL_A, { n: 2 }));
    const generation = await pipeline.generate(request, {
      requestId: 'billing-3',
      principal: { tokenId: 't', account: 'a', admin: false, issuer: 'gateway' },
      signal: new AbortController().signal,
      labels: labels('billing-3'),
    });
    assert.ok(generation.ok);
    const { result } = generation;
    assert.equal(result.imageUrls.length, 2);
    assert.deepEqual(
      [
        settlements[0]?.imagesReported,
        settlements[0]?.imagesReceived,
        settlements[0]?.imagesDelivered,
      ],
      [3, 3, 2],
    );
    assert.equal(shapeResponse(request, result, 'billing-3').usage.image_count, 2);
  });
});
