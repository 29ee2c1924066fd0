import { move, transferableSymbol, valueSymbol } from 'piscina';
import { prepareInputs } from './job-inputs.js';
import type {
  PrepareInputsTask,
  RenderedPng,
  RenderPngTask,
  RenderTask,
  SharedPreparedInputs,
} from './render-tasks.js';
import { renderPng } from './render-png.js';
import { asBuffer, ownedArrayBuffer, sharedCopy } from './shared-bytes.js';
import { settle, type TaskOutcome } from './task-outcome.js';

/**
 * The worker-thread entry of the render pool: everything CPU-bound in the local engine runs
 * here, off the gateway's event loop. Piscina calls the default export with each task.
 */
export default function runRenderTask(task: RenderTask): Promise<unknown> {
  switch (task.kind) {
    case 'prepareInputs':
      return decodeInputs(task);
    case 'renderPng':
      return encodeImage(task);
  }
}

/** Decodes the job's input images once; the results go to shared memory for the image tasks. */
function decodeInputs(task: PrepareInputsTask): Promise<TaskOutcome<SharedPreparedInputs>> {
  return settle(async () => {
    const inputs = task.inputs.map((image) => ({ ...image, bytes: asBuffer(image.bytes) }));
    const { base, referenceColours } = await prepareInputs(inputs, task.output, task.boxesOfInput);
    if (base === undefined) return { base: undefined, referenceColours };
    return {
      base: {
        pixels: { ...base.pixels, data: sharedCopy(base.pixels.data) },
        editMask: base.editMask === undefined ? undefined : sharedCopy(base.editMask),
      },
      referenceColours,
    };
  });
}

/** Renders and encodes one image; its PNG bytes are transferred back rather than copied. */
async function encodeImage(task: RenderPngTask): Promise<unknown> {
  const outcome: TaskOutcome<RenderedPng> = await settle(async () => ({
    png: ownedArrayBuffer(await renderPng(task.recipe)),
  }));
  const transfer = outcome.ok ? [outcome.value.png] : [];
  // Piscina posts the value (the outcome) with `transfer` as its transfer list.
  return move({ [transferableSymbol]: transfer, [valueSymbol]: outcome });
}
