import type { GenerationRequest } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';

/** Side of the square patch that counts as one image token. */
const PATCH = 32;
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/gu;

function imageTokens(width: number, height: number): number {
  return Math.ceil(width / PATCH) * Math.ceil(height / PATCH);
}

/**
 * Model A's informational token counts when the engine reports none (the local engine, OpenAI
 * upstreams). Text: one token per CJK character plus one per four other characters. Images: one
 * token per 32x32 patch, for each input image (input) and each produced image (output).
 * Documented in docs/api.md; never billed.
 */
export function estimateTokens(
  request: GenerationRequest,
  inputs: readonly LoadedImage[],
  width: number,
  height: number,
  imageCount: number,
): { input: number; output: number } {
  const text = request.prompt.text;
  const cjk = text.match(CJK)?.length ?? 0;
  const other = [...text].length - cjk;
  const textTokens = cjk + Math.ceil(other / 4);
  const inputImageTokens = inputs.reduce(
    (sum, image) => sum + imageTokens(image.width, image.height),
    0,
  );
  return { input: textTokens + inputImageTokens, output: imageCount * imageTokens(width, height) };
}
