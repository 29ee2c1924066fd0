import { MODEL_A, MODEL_B } from '../../src/domain/models.js';

export const GENERATION_URL = '/vendor/api/v1/services/aigc/multimodal-generation/generation';

type Content = ({ text: string } | { image: string })[];

/** A model A body with the given content (default: one text item) and parameters. */
export function modelABody(
  parameters?: Record<string, unknown>,
  content: Content = [{ text: 'a red fox in snow' }],
) {
  return {
    model: MODEL_A,
    input: { messages: [{ role: 'user', content }] },
    ...(parameters === undefined ? {} : { parameters }),
  };
}

export function modelBBody(
  parameters?: Record<string, unknown>,
  content: Content = [{ text: 'a lighthouse at dusk' }],
) {
  return {
    model: MODEL_B,
    input: { messages: [{ role: 'user', content }] },
    ...(parameters === undefined ? {} : { parameters }),
  };
}
