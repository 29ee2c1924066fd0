/** The models' own parameters, taken as top-level fields (what the SDKs send for `extra_body`). */
export const EXTRA_FIELDS = [
  'seed',
  'watermark',
  'negative_prompt',
  'prompt_extend',
  'thinking_mode',
  'enable_sequential',
  'color_palette',
  'bbox_list',
] as const;

/** Extras that are JSON text when they come as multipart form fields. */
export const STRUCTURED_EXTRAS: ReadonlySet<string> = new Set(['color_palette', 'bbox_list']);
/** Fields that are integers, and booleans, when they come as multipart form fields (text). */
export const INTEGER_FIELDS: ReadonlySet<string> = new Set(['n', 'seed']);
export const BOOLEAN_FIELDS: ReadonlySet<string> = new Set([
  'watermark',
  'prompt_extend',
  'thinking_mode',
  'enable_sequential',
  'stream',
]);

/**
 * OpenAI options that mean something for other models. Each is accepted with the values that
 * describe what our models do anyway, and otherwise refused with the reason, never dropped.
 */
export const OPTION_RULES: Readonly<Record<string, { accepted: readonly unknown[]; why: string }>> =
  {
    quality: {
      accepted: ['auto', 'standard'],
      why: 'each model has one quality (gen-2.7-image-pro: thinking_mode trades time for detail)',
    },
    // DALL-E 3's option, which LangChain's DallEAPIWrapper always sends (`vivid` unless told).
    style: { accepted: ['vivid', 'natural'], why: 'these models take the style from the prompt' },
    background: { accepted: ['auto', 'opaque'], why: 'the images are opaque PNGs' },
    output_format: { accepted: ['png'], why: 'the images are PNGs' },
    output_compression: {
      accepted: [],
      why: 'the images are PNGs, which have no compression level',
    },
    moderation: {
      accepted: ['auto'],
      why: "the upstream model's own content moderation applies and cannot be lowered",
    },
    stream: { accepted: [false], why: 'answers are not streamed: the images come in one answer' },
    partial_images: {
      accepted: [],
      why: 'answers are not streamed, so there are no partial images',
    },
    input_fidelity: { accepted: [], why: 'these models have no input fidelity setting' },
  };

/** The fields of both routes apart from the images. */
export const COMMON_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'prompt',
  'n',
  'size',
  'response_format',
  'user',
  ...Object.keys(OPTION_RULES),
  ...EXTRA_FIELDS,
]);

export const MASK_REFUSAL =
  'is not supported: to confine an edit of gen-2.7-image-pro to regions, send bbox_list (boxes [x1, y1, x2, y2] per input image)';
