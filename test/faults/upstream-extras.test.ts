import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import type { UsageRow } from '../../src/domain/usage-row.js';
import {
  type DashScopeBehaviour,
  type FakeDashScope,
  startFakeDashScope,
} from '../fixtures/fake-dashscope.js';
import { eventually, generate, generationBody, type Outcome } from './fault-rig.js';
import { BACKENDS, PRICE_MICROS, startServingGateway } from './serving-gateway.js';

/** How many result images the gateway has fetched from the fake to re-host them. */
function downloads(fake: FakeDashScope): number {
  return fake.requests.filter(
    (request) => request.method === 'GET' && request.path.startsWith('/results/'),
  ).length;
}

/** The image columns of a ledger row, in one comparable line. */
function imagesOf(row: UsageRow | undefined) {
  if (row === undefined) return 'no row';
  const { status, errorCode, imagesRequested, imagesReported, imagesReceived } = row;
  const { imagesDelivered, imagesBilled, costMicros } = row;
  return {
    status,
    errorCode,
    imagesRequested,
    imagesReported,
    imagesReceived,
    imagesDelivered,
    imagesBilled,
    costMicros,
  };
}

for (const [backend, target] of BACKENDS) {
  describe(`an upstream that sends more images than asked (${backend})`, () => {
    it('answers n images, records what was reported and received apart from what was delivered and billed, and bills n', async (t) => {
      const fake = await startFakeDashScope();
      t.after(() => fake.close());
      const serving = await startServingGateway(t, target, fake);
      if (serving === undefined) return;
      const { books } = serving;
      const token = await books.token();
      const cases: {
        model: typeof MODEL_A | typeof MODEL_B;
        n: number;
        upstream: DashScopeBehaviour & { kind: 'succeed' };
      }[] = [
        // n + 1 images, and usage.image_count says n + 1.
        { model: MODEL_A, n: 2, upstream: { kind: 'succeed', images: 3, imageCount: 3 } },
        { model: MODEL_B, n: 1, upstream: { kind: 'succeed', images: 2, imageCount: 2 } },
        // It claims n + 1 but sends n: what is billed is what was delivered.
        { model: MODEL_A, n: 2, upstream: { kind: 'succeed', images: 2, imageCount: 3 } },
      ];
      let expectedUsed = 0;
      for (const [index, { model, n, upstream }] of cases.entries()) {
        fake.script(upstream);
        const downloadsBefore = downloads(fake);
        const outcome = await generate(serving.url, {
          authorization: token.authorization,
          body: generationBody(model, n),
          requestId: `extras-${index}`,
        });
        assert.equal(outcome.status, 200, outcome.code);
        assert.equal(outcome.imageUrls.length, n, 'never more than n images in the answer');
        assert.equal(
          downloads(fake) - downloadsBefore,
          Math.min(n, upstream.images ?? 1),
          'the extras are counted, not downloaded',
        );
        expectedUsed += n;
        assert.deepEqual(await books.standing(token.id), { used: expectedUsed, reserved: 0 });
        const row = (await books.rows(token.id)).find(
          (each) => each.requestId === outcome.requestId,
        );
        assert.deepEqual(imagesOf(row), {
          status: 200,
          errorCode: undefined,
          imagesRequested: n,
          imagesReported: upstream.imageCount,
          imagesReceived: upstream.images,
          imagesDelivered: n,
          imagesBilled: n,
          costMicros: n * PRICE_MICROS[model],
        });
      }
    });

    it('with an image quota, a token is never billed past it however many images the upstream sends', async (t) => {
      const fake = await startFakeDashScope();
      t.after(() => fake.close());
      const serving = await startServingGateway(t, target, fake);
      if (serving === undefined) return;
      const { books } = serving;
      const token = await books.token({ imageQuota: 5 });
      const steps: { n: number; expect: number | 'refused' }[] = [
        { n: 2, expect: 2 },
        { n: 2, expect: 4 },
        { n: 2, expect: 'refused' }, // 4 + 2 > 5
        { n: 1, expect: 5 },
        { n: 1, expect: 'refused' },
      ];
      const outcomes: Outcome[] = [];
      for (const [index, step] of steps.entries()) {
        const submitted = fake.submissions().length;
        if (step.expect !== 'refused')
          fake.script({ kind: 'succeed', images: step.n + 1, imageCount: step.n + 1 });
        const outcome = await generate(serving.url, {
          authorization: token.authorization,
          body: generationBody(MODEL_A, step.n),
          requestId: `quota-${index}`,
        });
        outcomes.push(outcome);
        const { used, reserved } = await books.standing(token.id);
        assert.equal(reserved, 0);
        if (step.expect === 'refused') {
          assert.equal(outcome.status, 429);
          assert.equal(outcome.code, 'Throttling.AllocationQuota');
          assert.equal(fake.submissions().length, submitted, 'refused before the upstream');
        } else {
          assert.equal(outcome.status, 200, outcome.code);
          assert.equal(outcome.imageUrls.length, step.n);
          assert.equal(used, step.expect);
        }
        assert.ok(used <= 5, `used ${used} of a quota of 5`);
      }
      await eventually(
        async () => (await books.rows(token.id)).length === steps.length,
        5000,
        'every request has its row',
      );
      const rows = await books.rows(token.id);
      for (const outcome of outcomes) {
        const row = rows.find((each) => each.requestId === outcome.requestId);
        const billed = outcome.status === 200 ? outcome.imageUrls.length : 0;
        assert.deepEqual(
          [row?.status, row?.errorCode, row?.imagesDelivered, row?.imagesBilled],
          [outcome.status, outcome.code, billed, billed],
          outcome.requestId,
        );
      }
      assert.equal(
        rows.reduce((total, row) => total + row.imagesBilled, 0),
        5,
      );
      assert.deepEqual(await books.standing(token.id), { used: 5, reserved: 0 });
    });
  });
}
