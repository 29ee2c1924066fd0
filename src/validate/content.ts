import type { InputImage, Prompt } from '../domain/generation-request.js';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import { truncateCodePoints } from './code-points.js';
import { readImageReference } from './image-reference.js';

export const MAX_PROMPT_CODE_POINTS = 5000;
export const CONTENT_PATH = 'input.messages[0].content';

export interface ContentItem {
  text?: string;
  image?: string;
}

export interface ReadContent {
  prompt: Prompt;
  images: InputImage[];
}

/** Splits schema-checked content items into the one prompt and the input images, in order. */
export function readContent(
  items: readonly ContentItem[],
  maxImages: number,
  model: string,
): ReadContent {
  let prompt: Prompt | undefined;
  const images: InputImage[] = [];
  items.forEach((item, index) => {
    const path = `${CONTENT_PATH}[${index}]`;
    const hasText = item.text !== undefined;
    const hasImage = item.image !== undefined;
    if (hasText === hasImage) {
      throw invalidParameter(path, 'must carry exactly one of "text" or "image"');
    }
    if (item.text !== undefined) {
      if (prompt !== undefined) {
        throw invalidParameter(CONTENT_PATH, 'must contain exactly one text item, found more');
      }
      if (item.text.trim() === '') throw invalidParameter(`${path}.text`, 'must not be empty');
      prompt = truncateCodePoints(item.text, MAX_PROMPT_CODE_POINTS);
    } else if (item.image !== undefined) {
      if (item.image === '') throw invalidParameter(`${path}.image`, 'must not be empty');
      images.push({
        path: `${path}.image`,
        source: readImageReference(item.image, `${path}.image`),
      });
    }
  });
  if (prompt === undefined) {
    throw invalidParameter(CONTENT_PATH, 'must contain exactly one text item, found none');
  }
  if (images.length > maxImages) {
    throw new GatewayError(
      'InvalidParameter',
      `${CONTENT_PATH}: model ${model} takes at most ${maxImages} images, got ${images.length}`,
    );
  }
  return { prompt, images };
}
