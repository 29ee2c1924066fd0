import type { ChannelConfig } from '../config/channel-config.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import { MODEL_A } from '../domain/models.js';

/** What a channel can do beyond plain text-to-image. */
export interface ChannelCapabilities {
  bboxEditing: boolean;
  sequential: boolean;
  colorPalette: boolean;
  watermark: boolean;
  maxInputImages: number;
  /** `exact`: honours the size rules; `closest`: answers with the closest size it accepts. */
  sizes: 'exact' | 'closest';
}

/** The API's limits (docs/api.md §2.4): model A takes up to 9 input images, model B up to 3. */
const FULL: ChannelCapabilities = {
  bboxEditing: true,
  sequential: true,
  colorPalette: true,
  watermark: true,
  maxInputImages: 9,
  sizes: 'exact',
};

export function capabilitiesOf(config: ChannelConfig): ChannelCapabilities {
  switch (config.type) {
    case 'dashscope':
    case 'local':
      return FULL;
    case 'openai':
      return {
        bboxEditing: false,
        sequential: false,
        colorPalette: false,
        watermark: false,
        maxInputImages: config.maxInputImages,
        sizes: 'closest',
      };
  }
}

/** A feature a request needs, named the way the caller asked for it. */
export interface RequiredFeature {
  name: string;
  supportedBy(capabilities: ChannelCapabilities): boolean;
}

/** The features of `request` a channel must support to serve it (pure). */
export function requiredFeatures(request: GenerationRequest): RequiredFeature[] {
  const features: RequiredFeature[] = [];
  const imageCount = request.images.length;
  if (imageCount > 0)
    features.push({
      name: `${imageCount} input image${imageCount === 1 ? '' : 's'}`,
      supportedBy: (capabilities) => capabilities.maxInputImages >= imageCount,
    });
  if (request.parameters.watermark)
    features.push({
      name: 'watermark (parameters.watermark)',
      supportedBy: (capabilities) => capabilities.watermark,
    });
  if (request.model !== MODEL_A) return features;
  const parameters = request.parameters;
  if (parameters.bboxList?.some((boxes) => boxes.length > 0))
    features.push({
      name: 'bbox editing (parameters.bbox_list)',
      supportedBy: (capabilities) => capabilities.bboxEditing,
    });
  if (parameters.sequential)
    features.push({
      name: 'sequential output (parameters.enable_sequential)',
      supportedBy: (capabilities) => capabilities.sequential,
    });
  if (parameters.colorPalette !== undefined)
    features.push({
      name: 'colour palette (parameters.color_palette)',
      supportedBy: (capabilities) => capabilities.colorPalette,
    });
  return features;
}

export function missingFeatures(
  capabilities: ChannelCapabilities,
  features: readonly RequiredFeature[],
): string[] {
  return features
    .filter((feature) => !feature.supportedBy(capabilities))
    .map((feature) => feature.name);
}
