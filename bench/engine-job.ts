import type { LoadedImage } from '../src/domain/loaded-image.js';
import type { EngineJob } from '../src/engine/engine.js';
import { outputSize } from '../src/generation/output-size.js';
import { validateRequest } from '../src/validate/validate-request.js';

/** A model A job for the local engine with seed 42: `inputs` as its images, then `prompt`. */
export function engineJob(
  prompt: string,
  parameters: Record<string, unknown>,
  inputs: LoadedImage[] = [],
): EngineJob {
  const request = validateRequest({
    model: 'gen-2.7-image-pro',
    input: {
      messages: [
        {
          role: 'user',
          content: [
            ...inputs.map(() => ({ image: 'https://images.example/input' })),
            { text: prompt },
          ],
        },
      ],
    },
    parameters: { seed: 42, ...parameters },
  });
  return {
    request,
    inputs,
    output: outputSize(request, inputs),
    seed: 42,
    requestId: 'bench',
    signal: new AbortController().signal,
  };
}
