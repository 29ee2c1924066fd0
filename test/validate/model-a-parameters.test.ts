import { MODEL_A } from '../../src/domain/models.js';
import { modelABody } from '../helpers/requests.js';
import {
  type AcceptedCase,
  acceptedByValidator,
  MODEL_A_DEFAULTS,
  type RejectedCase,
  rejectedOverHttp,
  withImages,
} from './validation-table.js';

// docs/api.md §3 (bbox_list, enable_sequential, n, thinking_mode, watermark, seed), §3.4 and §8;
// §2.2 and §3.6 (strict types, model-foreign fields, bbox_list needs images). The box-inside-image
// check needs image dimensions and belongs to the inputs stage. Sizes and palettes have files of
// their own.

const images = (count: number, parameters: Record<string, unknown>) =>
  withImages(MODEL_A, count, parameters);
const MAX_SEED = 2_147_483_647;
const NOT_A_FIELD = /^is not a field of model gen-2\.7-image-pro$/;

const accepted: AcceptedCase[] = [
  // bbox_list
  {
    name: 'bbox_list with one box for one image, as interactive editing',
    body: images(1, { bbox_list: [[[0, 0, 100, 50]]] }),
    expect: { mode: 'interactive-edit', parameters: { bboxList: [[[0, 0, 100, 50]]] } },
  },
  {
    name: 'bbox_list with two boxes (the most) for one image',
    body: images(1, {
      bbox_list: [
        [
          [0, 0, 10, 10],
          [20, 30, 40, 50],
        ],
      ],
    }),
    expect: {
      mode: 'interactive-edit',
      parameters: {
        bboxList: [
          [
            [0, 0, 10, 10],
            [20, 30, 40, 50],
          ],
        ],
      },
    },
  },
  {
    name: 'bbox_list with [] for the first of two images',
    body: images(2, { bbox_list: [[], [[5, 6, 7, 8]]] }),
    expect: { mode: 'interactive-edit', parameters: { bboxList: [[], [[5, 6, 7, 8]]] } },
  },
  {
    name: 'bbox_list of only empty entries, as plain image-to-image',
    body: images(2, { bbox_list: [[], []] }),
    expect: { mode: 'image-to-image', parameters: { bboxList: [[], []] } },
  },
  {
    name: 'bbox_list with one entry per image for 9 images',
    body: images(9, { bbox_list: [[[0, 0, 1, 1]], [], [], [], [], [], [], [], [[1, 1, 2, 2]]] }),
    expect: { mode: 'interactive-edit' },
  },
  {
    name: 'a box reaching 8000, the largest image side',
    body: images(1, { bbox_list: [[[7999, 0, 8000, 8000]]] }),
    expect: { parameters: { bboxList: [[[7999, 0, 8000, 8000]]] } },
  },
  {
    name: 'bbox_list null as absent, with images',
    body: images(1, { bbox_list: null }),
    expect: { mode: 'image-to-image', parameters: { bboxList: undefined } },
  },
  // enable_sequential
  {
    name: 'enable_sequential true: sequential mode, n defaults to 12, no thinking',
    body: modelABody({ enable_sequential: true }),
    expect: {
      mode: 'sequential',
      parameters: { sequential: true, n: 12, thinkingMode: false },
    },
  },
  {
    name: 'enable_sequential false: normal text-to-image',
    body: modelABody({ enable_sequential: false }),
    expect: { mode: 'text-to-image', parameters: { sequential: false, n: 1 } },
  },
  {
    name: 'enable_sequential true with images: sequential mode wins',
    body: images(2, { enable_sequential: true }),
    expect: { mode: 'sequential', parameters: { sequential: true, n: 12 } },
  },
  {
    name: 'enable_sequential true with bbox_list: sequential mode wins',
    body: images(1, { enable_sequential: true, bbox_list: [[[0, 0, 1, 1]]] }),
    expect: { mode: 'sequential' },
  },
  // n
  {
    name: 'n 1 in normal mode',
    body: modelABody({ n: 1 }),
    expect: { parameters: { n: 1 } },
  },
  {
    name: 'n 4 in normal mode (the most)',
    body: modelABody({ n: 4 }),
    expect: { parameters: { n: 4 } },
  },
  {
    name: 'n 4 with images in normal mode',
    body: images(3, { n: 4 }),
    expect: { mode: 'image-to-image', parameters: { n: 4 } },
  },
  {
    name: 'n 1 in sequential mode',
    body: modelABody({ enable_sequential: true, n: 1 }),
    expect: { parameters: { n: 1 } },
  },
  {
    name: 'n 5 in sequential mode (beyond the normal limit)',
    body: modelABody({ enable_sequential: true, n: 5 }),
    expect: { parameters: { n: 5 } },
  },
  {
    name: 'n 12 in sequential mode (the most)',
    body: modelABody({ enable_sequential: true, n: 12 }),
    expect: { parameters: { n: 12 } },
  },
  {
    name: 'n null: the normal-mode default 1',
    body: modelABody({ n: null }),
    expect: { parameters: { n: 1 } },
  },
  {
    name: 'n null in sequential mode: the default 12',
    body: modelABody({ enable_sequential: true, n: null }),
    expect: { parameters: { n: 12 } },
  },
  {
    name: 'n written as 2.0 in JSON, which is the integer 2',
    body: '{"model":"gen-2.7-image-pro","input":{"messages":[{"role":"user","content":[{"text":"x"}]}]},"parameters":{"n":2.0}}',
    expect: { parameters: { n: 2 } },
  },
  // thinking_mode and its effective value (docs/api.md §3.4)
  {
    name: 'thinking_mode absent for text-to-image: in effect (default true)',
    body: modelABody(),
    expect: { parameters: { thinkingMode: true } },
  },
  {
    name: 'thinking_mode true for text-to-image: in effect',
    body: modelABody({ thinking_mode: true }),
    expect: { parameters: { thinkingMode: true } },
  },
  {
    name: 'thinking_mode false for text-to-image: off',
    body: modelABody({ thinking_mode: false }),
    expect: { parameters: { thinkingMode: false } },
  },
  {
    name: 'thinking_mode true with an input image: no effect',
    body: images(1, { thinking_mode: true }),
    expect: { parameters: { thinkingMode: false } },
  },
  {
    name: 'thinking_mode absent with an input image: no effect',
    body: images(1, {}),
    expect: { parameters: { thinkingMode: false } },
  },
  {
    name: 'thinking_mode true in sequential mode: no effect',
    body: modelABody({ thinking_mode: true, enable_sequential: true }),
    expect: { parameters: { thinkingMode: false } },
  },
  {
    name: 'thinking_mode true with enable_sequential false: in effect',
    body: modelABody({ thinking_mode: true, enable_sequential: false }),
    expect: { parameters: { thinkingMode: true } },
  },
  // watermark
  {
    name: 'watermark absent: false',
    body: modelABody(),
    expect: { parameters: { watermark: false } },
  },
  {
    name: 'watermark true',
    body: modelABody({ watermark: true }),
    expect: { parameters: { watermark: true } },
  },
  {
    name: 'watermark false',
    body: modelABody({ watermark: false }),
    expect: { parameters: { watermark: false } },
  },
  // seed
  {
    name: 'seed 0 (the least)',
    body: modelABody({ seed: 0 }),
    expect: { parameters: { seed: 0 } },
  },
  {
    name: 'seed 2147483647 (the most)',
    body: modelABody({ seed: MAX_SEED }),
    expect: { parameters: { seed: MAX_SEED } },
  },
  {
    name: 'seed 42',
    body: modelABody({ seed: 42 }),
    expect: { parameters: { seed: 42 } },
  },
  {
    name: 'seed null: absent, chosen later',
    body: modelABody({ seed: null }),
    expect: { parameters: { seed: undefined } },
  },
  {
    name: 'every model A parameter at once',
    body: images(1, {
      bbox_list: [[[1, 2, 3, 4]]],
      enable_sequential: false,
      size: '1K',
      n: 3,
      thinking_mode: true,
      color_palette: [
        { hex: '#112233', ratio: '50.00%' },
        { hex: '#445566', ratio: '25.00%' },
        { hex: '#778899', ratio: '25.00%' },
      ],
      watermark: true,
      seed: 7,
    }),
    expect: {
      mode: 'interactive-edit',
      parameters: {
        ...MODEL_A_DEFAULTS,
        size: { kind: 'preset', preset: '1K' },
        n: 3,
        thinkingMode: false,
        colorPalette: [
          { hex: '#112233', basisPoints: 5000 },
          { hex: '#445566', basisPoints: 2500 },
          { hex: '#778899', basisPoints: 2500 },
        ],
        watermark: true,
        seed: 7,
        bboxList: [[[1, 2, 3, 4]]],
      },
    },
  },
];

const BOX = [0, 0, 10, 10];

const rejected: RejectedCase[] = [
  // bbox_list
  {
    name: 'bbox_list without input images',
    body: modelABody({ bbox_list: [[BOX]] }),
    path: 'parameters.bbox_list',
    problem: /^requires input images$/,
  },
  {
    name: 'an empty bbox_list without input images',
    body: modelABody({ bbox_list: [] }),
    path: 'parameters.bbox_list',
    problem: /^requires input images$/,
  },
  {
    name: 'bbox_list with two entries for one image',
    body: images(1, { bbox_list: [[BOX], []] }),
    path: 'parameters.bbox_list',
    problem: /one entry per input image \(1\), got 2$/,
  },
  {
    name: 'bbox_list with one entry for two images',
    body: images(2, { bbox_list: [[BOX]] }),
    path: 'parameters.bbox_list',
    problem: /one entry per input image \(2\), got 1$/,
  },
  {
    name: 'an empty bbox_list for one image',
    body: images(1, { bbox_list: [] }),
    path: 'parameters.bbox_list',
    problem: /one entry per input image \(1\), got 0$/,
  },
  {
    name: 'three boxes for one image',
    body: images(1, { bbox_list: [[BOX, BOX, BOX]] }),
    path: 'parameters.bbox_list[0]',
    problem: /^must be a list of at most 2 boxes, each \[x1, y1, x2, y2\]$/,
  },
  {
    name: 'a box of three numbers',
    body: images(1, { bbox_list: [[[0, 0, 10]]] }),
    path: 'parameters.bbox_list[0][0]',
    problem: /^must be a box \[x1, y1, x2, y2\] of four integers$/,
  },
  {
    name: 'a box of five numbers',
    body: images(1, { bbox_list: [[[0, 0, 10, 10, 10]]] }),
    path: 'parameters.bbox_list[0][0]',
    problem: /^must be a box \[x1, y1, x2, y2\] of four integers$/,
  },
  {
    name: 'a flat box not wrapped per image (read as 4 boxes of numbers)',
    body: images(1, { bbox_list: [BOX] }),
    path: 'parameters.bbox_list[0]',
    problem: /^must be a list of at most 2 boxes, each \[x1, y1, x2, y2\]$/,
  },
  {
    name: 'a bare number where the boxes of an image belong',
    body: images(1, { bbox_list: [7] }),
    path: 'parameters.bbox_list[0]',
    problem: /^must be an array$/,
  },
  {
    name: 'a bare number where a box belongs',
    body: images(1, { bbox_list: [[7]] }),
    path: 'parameters.bbox_list[0][0]',
    problem: /^must be an array$/,
  },
  {
    name: 'bbox_list as a string',
    body: images(1, { bbox_list: '0,0,10,10' }),
    path: 'parameters.bbox_list',
    problem: /^must be an array$/,
  },
  {
    name: 'a box as an object',
    body: images(1, { bbox_list: [[{ x1: 0, y1: 0, x2: 10, y2: 10 }]] }),
    path: 'parameters.bbox_list[0][0]',
    problem: /^must be an array$/,
  },
  {
    name: 'a non-integer coordinate',
    body: images(1, { bbox_list: [[[0, 0, 10.5, 10]]] }),
    path: 'parameters.bbox_list[0][0][2]',
    problem: /^must be an integer$/,
  },
  {
    name: 'a coordinate as a string',
    body: images(1, { bbox_list: [[['0', 0, 10, 10]]] }),
    path: 'parameters.bbox_list[0][0][0]',
    problem: /^must be an integer$/,
  },
  {
    name: 'a null coordinate',
    body: images(1, { bbox_list: [[[0, null, 10, 10]]] }),
    path: 'parameters.bbox_list[0][0][1]',
    problem: /^must be an integer$/,
  },
  {
    name: 'a negative coordinate',
    body: images(1, { bbox_list: [[[-1, 0, 10, 10]]] }),
    path: 'parameters.bbox_list[0][0][0]',
    problem: /^must be at least 0$/,
  },
  {
    name: 'a coordinate beyond the largest image side (8000)',
    body: images(1, { bbox_list: [[[0, 0, 8001, 10]]] }),
    path: 'parameters.bbox_list[0][0][2]',
    problem: /^must be at most 8000$/,
  },
  {
    name: 'x1 equal to x2',
    body: images(1, { bbox_list: [[[10, 0, 10, 10]]] }),
    path: 'parameters.bbox_list[0][0]',
    problem: /x1 < x2 and y1 < y2, got \[10, 0, 10, 10\]$/,
  },
  {
    name: 'x1 greater than x2',
    body: images(1, { bbox_list: [[[20, 0, 10, 10]]] }),
    path: 'parameters.bbox_list[0][0]',
    problem: /x1 < x2 and y1 < y2/,
  },
  {
    name: 'y1 equal to y2',
    body: images(1, { bbox_list: [[[0, 10, 10, 10]]] }),
    path: 'parameters.bbox_list[0][0]',
    problem: /x1 < x2 and y1 < y2/,
  },
  {
    name: 'y1 greater than y2, in the second box of the second image',
    body: images(2, { bbox_list: [[], [BOX, [0, 30, 10, 20]]] }),
    path: 'parameters.bbox_list[1][1]',
    problem: /x1 < x2 and y1 < y2, got \[0, 30, 10, 20\]$/,
  },
  // enable_sequential
  {
    name: 'enable_sequential as the string "true"',
    body: modelABody({ enable_sequential: 'true' }),
    path: 'parameters.enable_sequential',
    problem: /^must be a boolean$/,
  },
  {
    name: 'enable_sequential as 1',
    body: modelABody({ enable_sequential: 1 }),
    path: 'parameters.enable_sequential',
    problem: /^must be a boolean$/,
  },
  // n
  {
    name: 'n 0 in normal mode',
    body: modelABody({ n: 0 }),
    path: 'parameters.n',
    problem: /^must be at least 1$/,
  },
  {
    name: 'n 5 in normal mode',
    body: modelABody({ n: 5 }),
    path: 'parameters.n',
    problem: /^must be between 1 and 4 in normal mode$/,
  },
  {
    name: 'n 5 in normal mode with images',
    body: images(1, { n: 5 }),
    path: 'parameters.n',
    problem: /^must be between 1 and 4 in normal mode$/,
  },
  {
    name: 'n 12 with enable_sequential false',
    body: modelABody({ n: 12, enable_sequential: false }),
    path: 'parameters.n',
    problem: /^must be between 1 and 4 in normal mode$/,
  },
  {
    name: 'n 0 in sequential mode',
    body: modelABody({ enable_sequential: true, n: 0 }),
    path: 'parameters.n',
    problem: /^must be at least 1$/,
  },
  {
    name: 'n 13 in sequential mode',
    body: modelABody({ enable_sequential: true, n: 13 }),
    path: 'parameters.n',
    problem: /^must be between 1 and 12 in sequential mode$/,
  },
  {
    name: 'n -1',
    body: modelABody({ n: -1 }),
    path: 'parameters.n',
    problem: /^must be at least 1$/,
  },
  {
    name: 'n 1.5',
    body: modelABody({ n: 1.5 }),
    path: 'parameters.n',
    problem: /^must be an integer$/,
  },
  {
    name: 'n as the string "2"',
    body: modelABody({ n: '2' }),
    path: 'parameters.n',
    problem: /^must be an integer$/,
  },
  {
    name: 'n as true',
    body: modelABody({ n: true }),
    path: 'parameters.n',
    problem: /^must be an integer$/,
  },
  // thinking_mode
  {
    name: 'thinking_mode as the string "true"',
    body: modelABody({ thinking_mode: 'true' }),
    path: 'parameters.thinking_mode',
    problem: /^must be a boolean$/,
  },
  {
    name: 'thinking_mode as 0',
    body: modelABody({ thinking_mode: 0 }),
    path: 'parameters.thinking_mode',
    problem: /^must be a boolean$/,
  },
  {
    name: 'thinking_mode of the wrong type even where it has no effect',
    body: images(1, { thinking_mode: 'off' }),
    path: 'parameters.thinking_mode',
    problem: /^must be a boolean$/,
  },
  // watermark
  {
    name: 'watermark as the string "false"',
    body: modelABody({ watermark: 'false' }),
    path: 'parameters.watermark',
    problem: /^must be a boolean$/,
  },
  {
    name: 'watermark as 1',
    body: modelABody({ watermark: 1 }),
    path: 'parameters.watermark',
    problem: /^must be a boolean$/,
  },
  // seed
  {
    name: 'seed -1',
    body: modelABody({ seed: -1 }),
    path: 'parameters.seed',
    problem: /^must be at least 0$/,
  },
  {
    name: 'seed 2147483648',
    body: modelABody({ seed: MAX_SEED + 1 }),
    path: 'parameters.seed',
    problem: /^must be at most 2147483647$/,
  },
  {
    name: 'seed 2^53',
    body: modelABody({ seed: 2 ** 53 }),
    path: 'parameters.seed',
    problem: /^must be at most 2147483647$/,
  },
  {
    name: 'seed 1.5',
    body: modelABody({ seed: 1.5 }),
    path: 'parameters.seed',
    problem: /^must be an integer$/,
  },
  {
    name: 'seed as the string "42"',
    body: modelABody({ seed: '42' }),
    path: 'parameters.seed',
    problem: /^must be an integer$/,
  },
  {
    name: 'seed as true',
    body: modelABody({ seed: true }),
    path: 'parameters.seed',
    problem: /^must be an integer$/,
  },
  // model-foreign and unknown fields
  {
    name: 'negative_prompt, a model B field',
    body: modelABody({ negative_prompt: 'blurry' }),
    path: 'parameters.negative_prompt',
    problem: NOT_A_FIELD,
  },
  {
    name: 'prompt_extend, a model B field',
    body: modelABody({ prompt_extend: false }),
    path: 'parameters.prompt_extend',
    problem: NOT_A_FIELD,
  },
  {
    name: 'enableSequential in camel case',
    body: modelABody({ enableSequential: true }),
    path: 'parameters.enableSequential',
    problem: NOT_A_FIELD,
  },
  {
    name: 'Seed in another case',
    body: modelABody({ Seed: 1 }),
    path: 'parameters.Seed',
    problem: NOT_A_FIELD,
  },
  {
    name: 'negative_prompt beside valid parameters',
    body: modelABody({ n: 2, negative_prompt: ' ', seed: 1 }),
    path: 'parameters.negative_prompt',
    problem: NOT_A_FIELD,
  },
];

acceptedByValidator('model A parameters: accepted', accepted);
rejectedOverHttp('model A parameters: rejected', rejected);
