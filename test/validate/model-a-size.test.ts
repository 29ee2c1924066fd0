import { MODEL_A } from '../../src/domain/models.js';
import { modelABody } from '../helpers/requests.js';
import {
  type AcceptedCase,
  acceptedByValidator,
  type RejectedCase,
  rejectedOverHttp,
  withImages,
} from './validation-table.js';

// docs/api.md §3.2, model A sizes. Text-to-image means no input image and
// enable_sequential false: presets 1K/2K/4K and custom totals in [768², 4096²]. Every other case
// (input images, or sequential): presets 1K/2K and custom totals in [768², 2048²]. Custom form
// ^[1-9][0-9]*\*[1-9][0-9]*$, aspect ratio within 1:8..8:1 in every case.

/** The three ways a request is or is not text-to-image. */
const CONTEXTS = [
  { label: 'text-to-image', body: (size: unknown) => modelABody({ size }), textToImage: true },
  {
    label: 'with an input image',
    body: (size: unknown) => withImages(MODEL_A, 1, { size }),
    textToImage: false,
  },
  {
    label: 'in sequential mode',
    body: (size: unknown) => modelABody({ size, enable_sequential: true }),
    textToImage: false,
  },
] as const;

const accepted: AcceptedCase[] = [];
const rejected: RejectedCase[] = [];

const custom = (width: number, height: number) => ({ kind: 'custom', width, height }) as const;

for (const context of CONTEXTS) {
  const { label, body } = context;
  const max = context.textToImage ? 4096 : 2048;
  const range = context.textToImage
    ? /total pixels must be between 768\*768 and 4096\*4096/
    : /total pixels must be between 768\*768 and 2048\*2048/;

  // Presets.
  for (const preset of ['1K', '2K'] as const) {
    accepted.push({
      name: `preset ${preset} ${label}`,
      body: body(preset),
      expect: { parameters: { size: { kind: 'preset', preset } } },
    });
  }
  accepted.push({
    name: `no size ${label}: the default preset 2K`,
    body: body(null),
    expect: { parameters: { size: { kind: 'preset', preset: '2K' } } },
  });
  if (context.textToImage) {
    accepted.push({
      name: `preset 4K ${label}`,
      body: body('4K'),
      expect: { parameters: { size: { kind: 'preset', preset: '4K' } } },
    });
  } else {
    rejected.push({
      name: `preset 4K ${label}`,
      body: body('4K'),
      path: 'parameters.size',
      problem: /^4K is available only for text-to-image/,
    });
  }

  // Custom sizes, with the boundaries of the range and of the aspect ratio on both sides.
  const inside: [number, number, string][] = [
    [1024, 1024, 'a square inside the range'],
    [768, 768, 'exactly the least total, 768*768'],
    [max, max, `exactly the most total, ${max}*${max}`],
    [1024, 576, 'a 16:9 size of exactly the least total'],
    [2176, 272, 'exactly 8:1 near the least total'],
    [272, 2176, 'exactly 1:8 near the least total'],
    [max === 4096 ? 11584 : 5792, max === 4096 ? 1448 : 724, 'exactly 8:1 near the most total'],
  ];
  if (context.textToImage) inside.push([4096, 2048, 'a total above 2048*2048']);
  for (const [width, height, what] of inside) {
    accepted.push({
      name: `custom ${width}*${height} ${label}: ${what}`,
      body: body(`${width}*${height}`),
      expect: { parameters: { size: custom(width, height) } },
    });
  }

  const outside: [string, RegExp, string][] = [
    ['767*768', range, 'one column under the least total'],
    ['768*767', range, 'one row under the least total'],
    ['100*100', range, 'far under the least total'],
    [`${max + 1}*${max}`, range, 'one column over the most total'],
    [`${max}*${max + 1}`, range, 'one row over the most total'],
    ['2177*272', /aspect ratio must be between 1:8 and 8:1, got 2177\*272$/, 'just wider than 8:1'],
    ['272*2177', /aspect ratio must be between 1:8 and 8:1/, 'just taller than 1:8'],
    ['600*4801', /aspect ratio must be between 1:8 and 8:1/, 'just taller than 1:8, mid range'],
    ['9000*100', /aspect ratio must be between 1:8 and 8:1/, 'far wider than 8:1'],
  ];
  if (!context.textToImage) {
    outside.push(['4096*4096', range, 'a total allowed only for text-to-image']);
    outside.push(['3000*2000', range, 'a total between 2048*2048 and 4096*4096']);
  }
  for (const [size, problem, what] of outside) {
    rejected.push({
      name: `custom ${size} ${label}: ${what}`,
      body: body(size),
      path: 'parameters.size',
      problem,
    });
  }
}

// Forms, which do not depend on the mode.
const BAD_FORMS: [unknown, string][] = [
  ['1024x1024', 'an x instead of *'],
  ['1024X1024', 'an X instead of *'],
  ['1024×1024', 'a multiplication sign instead of *'],
  ['1024 * 1024', 'spaces around *'],
  [' 1024*1024', 'a leading space'],
  ['1024*1024 ', 'a trailing space'],
  ['0*100', 'a zero width'],
  ['100*0', 'a zero height'],
  ['01*100', 'a leading zero'],
  ['1024*01024', 'a leading zero in the height'],
  ['-1024*1024', 'a negative width'],
  ['+1024*1024', 'a plus sign'],
  ['1024.0*1024', 'a decimal width'],
  ['1e3*1024', 'an exponent'],
  ['2K*1024', 'a preset mixed into a custom size'],
  ['1K*1K', 'presets on both sides'],
  ['1024*', 'no height'],
  ['*1024', 'no width'],
  ['1024', 'one number'],
  ['1024*1024*1', 'three numbers'],
  ['', 'an empty string'],
  ['3K', 'an unknown preset'],
  ['2k', 'a lower-case preset'],
  ['4k', 'a lower-case 4K'],
  [' 2K', 'a preset with a leading space'],
  ['2K ', 'a preset with a trailing space'],
  ['2048*2048px', 'a unit suffix'],
];
for (const [size, what] of BAD_FORMS) {
  rejected.push({
    name: `size ${JSON.stringify(size)}: ${what}`,
    body: modelABody({ size }),
    path: 'parameters.size',
    problem: /^must be a preset \(1K, 2K, 4K\) or <width>\*<height>/,
  });
}
for (const [size, type] of [
  [2048, 'a number'],
  [['1024', '1024'], 'an array'],
  [{ width: 1024, height: 1024 }, 'an object'],
  [true, 'a boolean'],
] as const) {
  rejected.push({
    name: `size as ${type}`,
    body: modelABody({ size }),
    path: 'parameters.size',
    problem: /^must be a string$/,
  });
}

acceptedByValidator('model A size: accepted', accepted);
rejectedOverHttp('model A size: rejected', rejected);
