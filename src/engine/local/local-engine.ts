import type { Engine, EngineImage, EngineJob, EngineOutput } from '../engine.js';
import { compositionFamily } from './composition.js';
import { prepareInputs } from './job-inputs.js';
import { paintPalette, paletteArea } from './palette-painter.js';
import { encodePng } from './png-encoding.js';
import { renderImage } from './render-image.js';
import { planRender } from './render-plan.js';
import { drawWatermark, watermarkBox } from './watermark.js';

/**
 * The built-in engine: a deterministic renderer with no model and no network, for development,
 * demos and CI. It honours every parameter visibly (size, count, palette, boxes, watermark, and
 * the input images) so clients can be tested against it, and the same job always gives the same
 * PNG bytes. See docs/local-engine.md.
 */
export class LocalEngine implements Engine {
  async generate(job: EngineJob): Promise<EngineOutput> {
    job.signal.throwIfAborted();
    const plan = planRender(job);
    const { width, height } = job.output;
    const { base, referenceColours } = await prepareInputs(job, plan);
    const family = compositionFamily(plan.familySeed, plan.detailed);
    const watermark = plan.watermark ? watermarkBox(width, height) : undefined;

    const images: EngineImage[] = [];
    for (let index = 0; index < plan.imageCount; index++) {
      job.signal.throwIfAborted();
      const canvas = renderImage({
        width,
        height,
        family,
        familySeed: plan.familySeed,
        index,
        base,
        referenceColours,
      });
      if (plan.palette !== undefined) {
        paintPalette(canvas, plan.palette, paletteArea(canvas, base?.editMask, watermark));
      }
      if (watermark !== undefined) drawWatermark(canvas);
      images.push({ kind: 'png', bytes: await encodePng(canvas) });
    }
    return { images, width, height };
  }
}
