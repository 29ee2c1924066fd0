import { MODEL_B } from '../../src/domain/models.js';
import { modelBBody } from '../helpers/requests.js';
import {
  type AcceptedCase,
  acceptedByValidator,
  MODEL_B_DEFAULTS,
  type RejectedCase,
  rejectedOverHttp,
  withImages,
} from './validation-table.js';

// docs/api.md §4, model B: n 1-6 default 1; negative_prompt a string of at most 500
// code points, truncated beyond, a single space accepted; prompt_extend boolean default true;
// watermark boolean default false; size W*H with total pixels in [512², 2048²] and aspect ratio
// within 1:8..8:1, no preset, default decided later; seed integer in [0, 2147483647].

const MAX_SEED = 2_147_483_647;
const EMOJI = '\u{1F3EE}';
const NOT_A_FIELD = /^is not a field of model txt-image-2\.0-pro$/;
const RANGE = /total pixels must be between 512\*512 and 2048\*2048/;
const ASPECT = /aspect ratio must be between 1:8 and 8:1/;
const FORM = /^must be <width>\*<height>/;

const accepted: AcceptedCase[] = [
  // n
  { name: 'n absent: 1', body: modelBBody(), expect: { parameters: { n: 1 } } },
  { name: 'n 1', body: modelBBody({ n: 1 }), expect: { parameters: { n: 1 } } },
  { name: 'n 6 (the most)', body: modelBBody({ n: 6 }), expect: { parameters: { n: 6 } } },
  {
    name: 'n 6 when editing three images',
    body: withImages(MODEL_B, 3, { n: 6 }),
    expect: { mode: 'image-to-image', parameters: { n: 6 } },
  },
  { name: 'n null: 1', body: modelBBody({ n: null }), expect: { parameters: { n: 1 } } },
  // negative_prompt
  {
    name: 'negative_prompt absent: undefined',
    body: modelBBody(),
    expect: { parameters: { negativePrompt: undefined } },
  },
  {
    name: 'negative_prompt of a single space (docs/api.md §4.3)',
    body: modelBBody({ negative_prompt: ' ' }),
    expect: { parameters: { negativePrompt: ' ' } },
  },
  {
    name: 'negative_prompt of words',
    body: modelBBody({ negative_prompt: 'blurry, low resolution, 模糊' }),
    expect: { parameters: { negativePrompt: 'blurry, low resolution, 模糊' } },
  },
  {
    name: 'negative_prompt of exactly 500 code points, untruncated',
    body: modelBBody({ negative_prompt: 'n'.repeat(500) }),
    expect: { parameters: { negativePrompt: 'n'.repeat(500) } },
  },
  {
    name: 'negative_prompt of 501 code points, truncated to 500',
    body: modelBBody({ negative_prompt: `${'n'.repeat(500)}Z` }),
    expect: { parameters: { negativePrompt: 'n'.repeat(500) } },
  },
  {
    name: 'negative_prompt of 500 astral code points (1000 units), untruncated',
    body: modelBBody({ negative_prompt: EMOJI.repeat(500) }),
    expect: { parameters: { negativePrompt: EMOJI.repeat(500) } },
  },
  {
    name: 'negative_prompt of 501 astral code points, truncated to 500 whole pairs',
    body: modelBBody({ negative_prompt: EMOJI.repeat(501) }),
    expect: { parameters: { negativePrompt: EMOJI.repeat(500) } },
  },
  {
    name: 'negative_prompt with a pair as the 500th code point, kept whole',
    body: modelBBody({ negative_prompt: `${'n'.repeat(499)}${EMOJI}z` }),
    expect: { parameters: { negativePrompt: `${'n'.repeat(499)}${EMOJI}` } },
  },
  {
    name: 'a truncated negative_prompt does not mark the prompt truncated',
    body: modelBBody({ negative_prompt: 'n'.repeat(600) }),
    expect: { prompt: { truncated: false } },
  },
  {
    name: 'negative_prompt null: undefined',
    body: modelBBody({ negative_prompt: null }),
    expect: { parameters: { negativePrompt: undefined } },
  },
  // prompt_extend
  {
    name: 'prompt_extend absent: true',
    body: modelBBody(),
    expect: { parameters: { promptExtend: true } },
  },
  {
    name: 'prompt_extend false',
    body: modelBBody({ prompt_extend: false }),
    expect: { parameters: { promptExtend: false } },
  },
  {
    name: 'prompt_extend true',
    body: modelBBody({ prompt_extend: true }),
    expect: { parameters: { promptExtend: true } },
  },
  // watermark
  {
    name: 'watermark absent: false',
    body: modelBBody(),
    expect: { parameters: { watermark: false } },
  },
  {
    name: 'watermark true',
    body: modelBBody({ watermark: true }),
    expect: { parameters: { watermark: true } },
  },
  {
    name: 'watermark false',
    body: modelBBody({ watermark: false }),
    expect: { parameters: { watermark: false } },
  },
  // size
  {
    name: 'size absent: left to the later default',
    body: modelBBody(),
    expect: { parameters: { size: undefined } },
  },
  // seed
  {
    name: 'seed 0 (the least)',
    body: modelBBody({ seed: 0 }),
    expect: { parameters: { seed: 0 } },
  },
  {
    name: 'seed 2147483647 (the most)',
    body: modelBBody({ seed: MAX_SEED }),
    expect: { parameters: { seed: MAX_SEED } },
  },
  {
    name: 'seed null: absent',
    body: modelBBody({ seed: null }),
    expect: { parameters: { seed: undefined } },
  },
  {
    name: 'every model B parameter at once, editing an image',
    body: withImages(MODEL_B, 1, {
      n: 2,
      negative_prompt: 'text, watermark',
      prompt_extend: false,
      watermark: true,
      size: '1024*1536',
      seed: 99,
    }),
    expect: {
      mode: 'image-to-image',
      parameters: {
        ...MODEL_B_DEFAULTS,
        n: 2,
        negativePrompt: 'text, watermark',
        promptExtend: false,
        watermark: true,
        size: { width: 1024, height: 1536 },
        seed: 99,
      },
    },
  },
];

const SIZES_INSIDE: [number, number, string][] = [
  [512, 512, 'exactly the least total'],
  [2048, 2048, 'exactly the most total'],
  [1024, 1024, 'a square inside the range'],
  [1328, 1328, 'an odd square'],
  [1664, 928, 'a 16:9-ish size'],
  [1456, 182, 'exactly 8:1 near the least total'],
  [182, 1456, 'exactly 1:8 near the least total'],
  [5792, 724, 'exactly 8:1 near the most total'],
  [1024, 4096, 'a tall size of exactly the most total'],
];
for (const [width, height, what] of SIZES_INSIDE) {
  accepted.push({
    name: `size ${width}*${height}: ${what}`,
    body: modelBBody({ size: `${width}*${height}` }),
    expect: { parameters: { size: { width, height } } },
  });
}
accepted.push({
  name: 'size 2048*2048 when editing images (same range as text-to-image)',
  body: withImages(MODEL_B, 2, { size: '2048*2048' }),
  expect: { parameters: { size: { width: 2048, height: 2048 } } },
});

const rejected: RejectedCase[] = [
  // n
  {
    name: 'n 0',
    body: modelBBody({ n: 0 }),
    path: 'parameters.n',
    problem: /^must be at least 1$/,
  },
  { name: 'n 7', body: modelBBody({ n: 7 }), path: 'parameters.n', problem: /^must be at most 6$/ },
  {
    name: 'n 7 when editing',
    body: withImages(MODEL_B, 1, { n: 7 }),
    path: 'parameters.n',
    problem: /^must be at most 6$/,
  },
  {
    name: 'n -2',
    body: modelBBody({ n: -2 }),
    path: 'parameters.n',
    problem: /^must be at least 1$/,
  },
  {
    name: 'n 1.5',
    body: modelBBody({ n: 1.5 }),
    path: 'parameters.n',
    problem: /^must be an integer$/,
  },
  {
    name: 'n as the string "2"',
    body: modelBBody({ n: '2' }),
    path: 'parameters.n',
    problem: /^must be an integer$/,
  },
  // negative_prompt
  {
    name: 'negative_prompt as a number',
    body: modelBBody({ negative_prompt: 5 }),
    path: 'parameters.negative_prompt',
    problem: /^must be a string$/,
  },
  {
    name: 'negative_prompt as an array of words',
    body: modelBBody({ negative_prompt: ['blurry', 'dark'] }),
    path: 'parameters.negative_prompt',
    problem: /^must be a string$/,
  },
  {
    name: 'negative_prompt as true',
    body: modelBBody({ negative_prompt: true }),
    path: 'parameters.negative_prompt',
    problem: /^must be a string$/,
  },
  // prompt_extend
  {
    name: 'prompt_extend as the string "false"',
    body: modelBBody({ prompt_extend: 'false' }),
    path: 'parameters.prompt_extend',
    problem: /^must be a boolean$/,
  },
  {
    name: 'prompt_extend as 0',
    body: modelBBody({ prompt_extend: 0 }),
    path: 'parameters.prompt_extend',
    problem: /^must be a boolean$/,
  },
  // watermark
  {
    name: 'watermark as the string "true"',
    body: modelBBody({ watermark: 'true' }),
    path: 'parameters.watermark',
    problem: /^must be a boolean$/,
  },
  {
    name: 'watermark as 1',
    body: modelBBody({ watermark: 1 }),
    path: 'parameters.watermark',
    problem: /^must be a boolean$/,
  },
  // seed
  {
    name: 'seed -1',
    body: modelBBody({ seed: -1 }),
    path: 'parameters.seed',
    problem: /^must be at least 0$/,
  },
  {
    name: 'seed 2147483648',
    body: modelBBody({ seed: MAX_SEED + 1 }),
    path: 'parameters.seed',
    problem: /^must be at most 2147483647$/,
  },
  {
    name: 'seed 0.5',
    body: modelBBody({ seed: 0.5 }),
    path: 'parameters.seed',
    problem: /^must be an integer$/,
  },
  {
    name: 'seed as the string "7"',
    body: modelBBody({ seed: '7' }),
    path: 'parameters.seed',
    problem: /^must be an integer$/,
  },
  // size type
  {
    name: 'size as a number',
    body: modelBBody({ size: 1024 }),
    path: 'parameters.size',
    problem: /^must be a string$/,
  },
];

const SIZES_OUTSIDE: [string, RegExp, string][] = [
  ['511*512', RANGE, 'one column under the least total'],
  ['512*511', RANGE, 'one row under the least total'],
  ['2049*2048', RANGE, 'one column over the most total'],
  ['2048*2049', RANGE, 'one row over the most total'],
  ['4096*4096', RANGE, 'far over the most total'],
  ['1465*183', ASPECT, 'just wider than 8:1'],
  ['183*1465', ASPECT, 'just taller than 1:8'],
  ['4000*400', ASPECT, '10:1'],
  ['1K', FORM, 'a model A preset'],
  ['2K', FORM, 'a model A preset'],
  ['1024x1024', FORM, 'an x instead of *'],
  ['0*512', FORM, 'a zero width'],
  ['01*512', FORM, 'a leading zero'],
  ['1024*', FORM, 'no height'],
  ['1024 * 1024', FORM, 'spaces around *'],
  ['2K*1024', FORM, 'a preset mixed in'],
  ['', FORM, 'an empty string'],
];
for (const [size, problem, what] of SIZES_OUTSIDE) {
  rejected.push({
    name: `size ${JSON.stringify(size)}: ${what}`,
    body: modelBBody({ size }),
    path: 'parameters.size',
    problem,
  });
}
rejected.push({
  name: 'size 2049*2048 when editing',
  body: withImages(MODEL_B, 1, { size: '2049*2048' }),
  path: 'parameters.size',
  problem: RANGE,
});

// Model A's fields and unknown fields are named.
const FOREIGN: [string, unknown][] = [
  ['thinking_mode', true],
  ['enable_sequential', false],
  ['bbox_list', []],
  ['color_palette', [{ hex: '#000000', ratio: '100.00%' }]],
  ['negativePrompt', 'blurry'],
  ['steps', 30],
];
for (const [field, value] of FOREIGN) {
  rejected.push({
    name: `${field}, not a field of model B`,
    body: modelBBody({ n: 1, [field]: value }),
    path: `parameters.${field}`,
    problem: NOT_A_FIELD,
  });
}

acceptedByValidator('model B parameters: accepted', accepted);
rejectedOverHttp('model B parameters: rejected', rejected);
