import { type TSchema, Type } from '@sinclair/typebox';
import { MODEL_A, MODEL_B } from '../domain/models.js';

/**
 * JSON Schemas of the request body, one per model. The validator compiles them once at start-up
 * and /openapi.json publishes them, so the contract and the check cannot drift apart. Rules that
 * relate one field to another (mode-dependent ranges, palette sums, counts per model) are in
 * `model-a-rules.ts` and `model-b-rules.ts`; the schemas' descriptions state them for readers.
 *
 * `x-error` gives the message shown when a field breaks its `pattern` or its item counts.
 */

export const MAX_SEED = 2_147_483_647;

const ContentItem = Type.Object(
  {
    text: Type.Optional(
      Type.String({
        description:
          'The prompt. Exactly one text item per message; at most 5000 Unicode code points, longer prompts are truncated (response header X-Prompt-Truncated: true).',
      }),
    ),
    image: Type.Optional(
      Type.String({
        description:
          'An input image: an http(s) URL, or data:<MIME_type>;base64,<data>. JPEG, PNG without alpha, BMP or WEBP; 240-8000 pixels per side; aspect ratio 1:8 to 8:1; at most 20 MB.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Carries exactly one of `text` or `image`.',
  },
);

const Message = Type.Object(
  {
    role: Type.Literal('user'),
    content: Type.Array(ContentItem, { minItems: 1 }),
  },
  { additionalProperties: false },
);

const Input = Type.Object(
  {
    messages: Type.Array(Message, {
      minItems: 1,
      maxItems: 1,
      description: 'Exactly one message: only single-turn conversation is supported.',
    }),
  },
  { additionalProperties: false },
);

/** The SDK's async_call adds it; the X-DashScope-Async header, not this, makes a request a task. */
const IsAsync = Type.Boolean({
  description:
    'Accepted and ignored: the header X-DashScope-Async: enable is what makes the request a task.',
});
const Seed = Type.Integer({ minimum: 0, maximum: MAX_SEED, description: 'Random seed.' });

const ColorPaletteEntry = Type.Object(
  {
    hex: Type.String({
      pattern: '^#[0-9A-Fa-f]{6}$',
      'x-error': 'must be a colour of the form #RRGGBB',
    }),
    ratio: Type.String({
      pattern: '^(?:[0-9]|[1-9][0-9]|100)\\.[0-9]{2}%$',
      'x-error': 'must be a percentage with two decimals, of the form NN.NN%',
    }),
  },
  { additionalProperties: false },
);

const BoundingBoxSchema = Type.Array(Type.Integer({ minimum: 0, maximum: 8000 }), {
  minItems: 4,
  maxItems: 4,
  'x-error': 'must be a box [x1, y1, x2, y2] of four integers',
  description:
    '[x1, y1, x2, y2]: top-left and bottom-right corners in absolute pixels, x1 < x2, y1 < y2.',
});

/** How the answer is delivered (docs/api.md, Streaming); the same fields for both models. */
const AnswerFields = {
  stream: Type.Optional(
    Type.Boolean({
      description:
        'true answers as Server-Sent Events (text/event-stream); false, the default, changes nothing.',
    }),
  ),
  incremental_output: Type.Optional(
    Type.Boolean({
      description:
        "In a stream, with model A's sequential mode: each image in its own event. Default false.",
    }),
  ),
  result_format: Type.Optional(
    Type.Literal('message', { description: 'Only "message", the shape every answer has.' }),
  ),
};

export const ModelAParametersSchema = Type.Object(
  {
    bbox_list: Type.Optional(
      Type.Array(
        Type.Array(BoundingBoxSchema, {
          maxItems: 2,
          'x-error': 'must be a list of at most 2 boxes, each [x1, y1, x2, y2]',
        }),
        {
          description:
            'Interactive-editing regions: one entry per input image, in order; [] for an image that needs no editing; at most 2 boxes per image.',
        },
      ),
    ),
    enable_sequential: Type.Optional(
      Type.Boolean({ description: 'true enables sequential (group) output. Default false.' }),
    ),
    size: Type.Optional(
      Type.String({
        description:
          'A preset 1K, 2K or 4K, or <width>*<height>. Default 2K. 4K and custom totals up to 4096*4096 only for text-to-image (no input image, enable_sequential false); otherwise up to 2048*2048. Custom totals from 768*768, aspect ratio 1:8 to 8:1.',
      }),
    ),
    n: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'Normal mode 1-4, default 1. Sequential mode 1-12, default 12 (an upper bound).',
      }),
    ),
    thinking_mode: Type.Optional(
      Type.Boolean({
        description:
          'Default true. In effect only without input images and with sequential mode off.',
      }),
    ),
    color_palette: Type.Optional(
      Type.Array(ColorPaletteEntry, {
        minItems: 3,
        maxItems: 10,
        description:
          '3-10 colours whose ratios sum to exactly 100.00%. Not with enable_sequential.',
      }),
    ),
    watermark: Type.Optional(
      Type.Boolean({ description: 'Adds "AI生成" bottom-right. Default false.' }),
    ),
    seed: Type.Optional(Seed),
    is_async: Type.Optional(IsAsync),
    ...AnswerFields,
  },
  { additionalProperties: false },
);

export const ModelBParametersSchema = Type.Object(
  {
    n: Type.Optional(Type.Integer({ minimum: 1, maximum: 6, description: 'Default 1.' })),
    negative_prompt: Type.Optional(
      Type.String({ description: 'At most 500 code points; longer values are truncated.' }),
    ),
    prompt_extend: Type.Optional(
      Type.Boolean({ description: 'Smart prompt rewriting. Default true.' }),
    ),
    watermark: Type.Optional(Type.Boolean({ description: 'Default false.' })),
    size: Type.Optional(
      Type.String({
        description:
          "<width>*<height>, total pixels 512*512 to 2048*2048, aspect ratio 1:8 to 8:1. Default 2048*2048; for edits, the last input image's aspect ratio at about 2048*2048 pixels.",
      }),
    ),
    seed: Type.Optional(Seed),
    is_async: Type.Optional(IsAsync),
    ...AnswerFields,
  },
  { additionalProperties: false },
);

function requestSchema(model: string, parameters: TSchema) {
  return Type.Object(
    {
      model: Type.Literal(model),
      input: Input,
      parameters: Type.Optional(parameters),
    },
    { additionalProperties: false, title: `Request for ${model}` },
  );
}

export const ModelARequestSchema = requestSchema(MODEL_A, ModelAParametersSchema);
export const ModelBRequestSchema = requestSchema(MODEL_B, ModelBParametersSchema);
