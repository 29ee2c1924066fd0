import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Admission, Settled } from '../../src/admission/admission.js';
import type { ReloadableRouter } from '../../src/channels/reloadable-router.js';
import type { Engine, EngineJob, EngineRun, PngImage } from '../../src/engine/engine.js';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { GenerationPipeline } from '../../src/generation/generation-pipeline.js';
import { validateRequest } from '../../src/validate/validate-request.js';
import {
  channels,
  jobFor,
  MODEL_A,
  requestBody,
  routerFor,
  temporaryStorage,
} from '../channels/channel-fixtures.js';
import { billedRow, rowLabelsFor } from '../helpers/row-labels.js';
import { eventually } from '../helpers/waits.js';
import { watchRenders } from '../engine/render-watch.js';

const BILLED: Settled = { outcome: 'billed', row: billedRow('t', 0) };

/** An admission that admits everything, counting the images billed one by one. */
function countingAdmission(): { admission: Admission; billedOneByOne: () => number } {
  let billed = 0;
  const admission: Admission = {
    async admit() {
      return {
        settle: async () => BILLED,
        billDelivered: async (images) => {
          billed += images;
        },
        release: async () => ({ imagesDelivered: billed, imagesBilled: billed, costMicros: 0 }),
      };
    },
  };
  return { admission, billedOneByOne: () => billed };
}

/** Runs `body` as an incremental stream, recording each hand-over; `onHandOver` runs inside it. */
async function streamed(
  engine: Engine,
  body: object,
  onHandOver: (index: number) => void = () => {},
) {
  const { admission, billedOneByOne } = countingAdmission();
  const pipeline = new GenerationPipeline({
    inputs: { load: async () => [] },
    admission,
    engine,
    results: { save: async (bytes) => `https://images.test/${bytes.toString('latin1')}` },
  });
  const handedOver: { url: string; index: number }[] = [];
  const generation = await pipeline.generate(validateRequest(structuredClone(body)), {
    requestId: 'incremental-1',
    principal: { tokenId: 't', account: 'a', admin: false, issuer: 'gateway' },
    signal: new AbortController().signal,
    labels: rowLabelsFor('incremental-1', 't'),
    handOver: async (url, index) => {
      handedOver.push({ url, index });
      onHandOver(index);
      return true;
    },
  });
  return { generation, handedOver, billed: billedOneByOne() };
}

describe('an incremental stream over an engine that yields its images', () => {
  it('hands over each image of a local group before the next is rendered', async (t) => {
    const engine = new LocalEngine({ workers: 1 });
    t.after(() => engine.close());
    let handOvers = 0;
    // Image i may start rendering only once image i - 1 is handed over: a run that yielded its
    // images only at its end would never let image 1 start.
    watchRenders(t, engine, (index) =>
      eventually(() => handOvers >= index, 5_000, `image ${index - 1} handed over`),
    );
    const body = requestBody(MODEL_A, { size: '1K', n: 3 });
    const { generation, handedOver, billed } = await streamed(engine, body, () => handOvers++);
    assert.ok(generation.ok);
    assert.deepEqual(
      handedOver.map(({ index }) => index),
      [0, 1, 2],
    );
    assert.equal(billed, 3);
  });
});

describe('a failover after a local channel yielded an image', () => {
  let storage: Awaited<ReturnType<typeof temporaryStorage>>;
  let router: ReloadableRouter;
  /** The first channel yields its image 0, then fails; the second renders the whole group. */
  const engines: Engine<PngImage>[] = [
    { generate: (job) => failsAfterFirst(job) },
    { generate: (job) => renders(job, 'steady') },
  ];

  before(async () => {
    storage = await temporaryStorage();
    let built = 0;
    router = routerFor(
      channels([
        { name: 'flaky', type: 'local' },
        { name: 'steady', type: 'local', priority: 1 },
      ]),
      { storage, localEngine: () => engines[built++] as Engine<PngImage> },
    );
  });
  after(async () => {
    await router.close();
    await storage.dispose();
  });

  it('yields the failed attempt image again, index for index, from the next channel', async () => {
    const run = router.generate(jobFor(requestBody(MODEL_A, { n: 2 })));
    const yielded: string[] = [];
    let step = await run.next();
    for (; step.done !== true; step = await run.next())
      yielded.push(`${step.value.index}:${pngText(step.value.image)}`);
    assert.deepEqual(yielded, ['0:flaky-0', '0:steady-0', '1:steady-1']);
    assert.equal(step.value.channel, 'steady');
    assert.deepEqual(step.value.images.map(pngText), ['steady-0', 'steady-1']);
  });

  it('delivers and bills that index once', async () => {
    const { generation, handedOver, billed } = await streamed(
      router,
      requestBody(MODEL_A, { n: 2 }),
    );
    assert.ok(generation.ok);
    assert.deepEqual(handedOver, [
      { url: 'https://images.test/flaky-0', index: 0 },
      { url: 'https://images.test/steady-1', index: 1 },
    ]);
    assert.equal(billed, 2);
    assert.equal(generation.outcome.channel, 'steady');
  });
});

function png(text: string): PngImage {
  return { kind: 'png', bytes: Buffer.from(text, 'latin1') };
}

function pngText(image: { kind: string }): string {
  return (image as PngImage).bytes.toString('latin1');
}

async function* renders(job: EngineJob, name: string): EngineRun<PngImage> {
  const images: PngImage[] = [];
  for (let index = 0; index < job.request.parameters.n; index++) {
    const image = png(`${name}-${index}`);
    images.push(image);
    yield { image, index };
  }
  return { images, width: job.output.width, height: job.output.height };
}

async function* failsAfterFirst(job: EngineJob): EngineRun<PngImage> {
  yield { image: png('flaky-0'), index: 0 };
  job.signal.throwIfAborted();
  throw new GatewayError('InternalError', 'the renderer broke after its first image');
}
