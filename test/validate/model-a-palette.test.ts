import { MODEL_A } from '../../src/domain/models.js';
import { modelABody } from '../helpers/requests.js';
import {
  type AcceptedCase,
  acceptedByValidator,
  type RejectedCase,
  rejectedOverHttp,
  withImages,
} from './validation-table.js';

// docs/api.md §3.5 color_palette: 3-10 entries of {hex "#RRGGBB", ratio "NN.NN%"}, both
// required, ratios summing to exactly 100.00% (computed in hundredths, never in floating point),
// and only when enable_sequential is false.

const PATH = 'parameters.color_palette';

/** Palette entries with these ratios and distinct colours. */
function palette(...ratios: string[]): { hex: string; ratio: string }[] {
  return ratios.map((ratio, index) => ({
    hex: `#${(index * 0x1a2b3c + 0x102030).toString(16).slice(-6).padStart(6, '0').toUpperCase()}`,
    ratio,
  }));
}

const THIRDS = palette('33.33%', '33.33%', '33.34%');
const FLOAT_TRAP = ['34.54%', '21.99%', '21.55%', '2.88%', '7.24%', '11.80%'];

const accepted: AcceptedCase[] = [
  {
    name: '33.33% + 33.33% + 33.34%, exactly 100.00% in hundredths',
    body: modelABody({ color_palette: THIRDS }),
    expect: {
      parameters: {
        colorPalette: THIRDS.map((entry, index) => ({
          hex: entry.hex,
          basisPoints: index === 2 ? 3334 : 3333,
        })),
      },
    },
  },
  {
    name: '8 colours of 12.50% (the recommended count)',
    body: modelABody({ color_palette: palette(...Array<string>(8).fill('12.50%')) }),
    expect: {
      parameters: {
        colorPalette: palette(...Array<string>(8).fill('12.50%')).map((entry) => ({
          hex: entry.hex,
          basisPoints: 1250,
        })),
      },
    },
  },
  {
    name: '10 colours of 10.00% (the most)',
    body: modelABody({ color_palette: palette(...Array<string>(10).fill('10.00%')) }),
    expect: {
      parameters: {
        colorPalette: palette(...Array<string>(10).fill('10.00%')).map((entry) => ({
          hex: entry.hex,
          basisPoints: 1000,
        })),
      },
    },
  },
  {
    // In floating point these six sum to 99.99999999999999.
    name: 'six ratios exactly 100.00% whose floating-point sum is not 100',
    body: modelABody({ color_palette: palette(...FLOAT_TRAP) }),
    expect: {
      parameters: {
        colorPalette: palette(...FLOAT_TRAP).map((entry, index) => ({
          hex: entry.hex,
          basisPoints: [3454, 2199, 2155, 288, 724, 1180][index] as number,
        })),
      },
    },
  },
  {
    name: 'lower-case hex, upper-cased in the result',
    body: modelABody({
      color_palette: [
        { hex: '#ff00aa', ratio: '40.00%' },
        { hex: '#0a0b0c', ratio: '30.00%' },
        { hex: '#AbCdEf', ratio: '30.00%' },
      ],
    }),
    expect: {
      parameters: {
        colorPalette: [
          { hex: '#FF00AA', basisPoints: 4000 },
          { hex: '#0A0B0C', basisPoints: 3000 },
          { hex: '#ABCDEF', basisPoints: 3000 },
        ],
      },
    },
  },
  {
    name: 'single-digit percentages (5.00%)',
    body: modelABody({ color_palette: palette('5.00%', '5.00%', '90.00%') }),
    expect: {
      parameters: {
        colorPalette: palette('5.00%', '5.00%', '90.00%').map((e, i) => ({
          hex: e.hex,
          basisPoints: [500, 500, 9000][i] as number,
        })),
      },
    },
  },
  {
    name: 'a palette with enable_sequential false',
    body: modelABody({ color_palette: THIRDS, enable_sequential: false }),
    expect: { mode: 'text-to-image', parameters: { sequential: false } },
  },
  {
    name: 'a palette with an input image',
    body: withImages(MODEL_A, 1, { color_palette: THIRDS }),
    expect: { mode: 'image-to-image' },
  },
  {
    name: 'a palette null as absent, even in sequential mode',
    body: modelABody({ color_palette: null, enable_sequential: true }),
    expect: { mode: 'sequential', parameters: { colorPalette: undefined } },
  },
];

const entry = (hex: unknown, ratio: unknown) => ({ hex, ratio });
const withEntry = (index: number, replacement: unknown) =>
  modelABody({
    color_palette: THIRDS.map((original, i) => (i === index ? replacement : original)),
  });

const rejected: RejectedCase[] = [
  {
    name: 'a palette with enable_sequential true',
    body: modelABody({ color_palette: THIRDS, enable_sequential: true }),
    path: PATH,
    problem: /available only when parameters\.enable_sequential is false/,
  },
  {
    name: 'two colours',
    body: modelABody({ color_palette: palette('50.00%', '50.00%') }),
    path: PATH,
    problem: /at least 3 items/,
  },
  {
    name: 'an empty palette',
    body: modelABody({ color_palette: [] }),
    path: PATH,
    problem: /at least 3 items/,
  },
  {
    name: 'eleven colours',
    body: modelABody({
      color_palette: palette(...Array<string>(10).fill('9.00%'), '10.00%'),
    }),
    path: PATH,
    problem: /at most 10 items/,
  },
  {
    name: 'a palette as an object',
    body: modelABody({ color_palette: { '#FF0000': '100.00%' } }),
    path: PATH,
    problem: /^must be an array$/,
  },
  {
    name: 'an entry as a string',
    body: withEntry(0, '#FF0000'),
    path: `${PATH}[0]`,
    problem: /^must be an object$/,
  },
  {
    name: 'a null entry',
    body: withEntry(1, null),
    path: `${PATH}[1]`,
    problem: /^must be an object$/,
  },
  {
    name: 'an entry without hex',
    body: withEntry(1, { ratio: '33.33%' }),
    path: `${PATH}[1].hex`,
    problem: /^is required$/,
  },
  {
    name: 'an entry without ratio',
    body: withEntry(2, { hex: '#FF0000' }),
    path: `${PATH}[2].ratio`,
    problem: /^is required$/,
  },
  {
    name: 'an entry whose ratio is null (absent, so missing)',
    body: withEntry(2, { hex: '#FF0000', ratio: null }),
    path: `${PATH}[2].ratio`,
    problem: /^is required$/,
  },
  {
    name: 'an entry with an extra field',
    body: withEntry(2, { hex: '#FF0000', ratio: '33.34%', name: 'red' }),
    path: `${PATH}[2].name`,
    problem: /is not a field of model/,
  },
];

const BAD_HEX: [unknown, string][] = [
  ['FF0000', 'without #'],
  ['#F00', 'in short form'],
  ['#FF000', 'of five digits'],
  ['#FF00000', 'of seven digits'],
  ['#GG0000', 'with a non-hex digit'],
  ['#FF0000FF', 'with alpha'],
  ['red', 'as a colour name'],
  ['#FF0000 ', 'with a trailing space'],
  ['', 'empty'],
];
for (const [hex, what] of BAD_HEX) {
  rejected.push({
    name: `hex ${JSON.stringify(hex)} ${what}`,
    body: withEntry(1, entry(hex, '33.33%')),
    path: `${PATH}[1].hex`,
    problem: /^must be a colour of the form #RRGGBB$/,
  });
}
rejected.push({
  name: 'hex as a number',
  body: withEntry(1, entry(0xff0000, '33.33%')),
  path: `${PATH}[1].hex`,
  problem: /^must be a string$/,
});

const BAD_RATIO: [unknown, string][] = [
  ['33.3%', 'with one decimal'],
  ['33.333%', 'with three decimals'],
  ['33%', 'without decimals'],
  ['33.33', 'without %'],
  ['33,33%', 'with a decimal comma'],
  ['033.33%', 'with a leading zero'],
  ['101.00%', 'over 100'],
  ['-33.33%', 'negative'],
  ['+33.33%', 'with a plus sign'],
  [' 33.33%', 'with a leading space'],
  ['33.33 %', 'with a space before %'],
  ['.33%', 'without an integer part'],
  ['', 'empty'],
];
for (const [ratio, what] of BAD_RATIO) {
  rejected.push({
    name: `ratio ${JSON.stringify(ratio)} ${what}`,
    body: withEntry(2, entry('#FF0000', ratio)),
    path: `${PATH}[2].ratio`,
    problem: /^must be a percentage with two decimals, of the form NN\.NN%$/,
  });
}
rejected.push({
  name: 'ratio as a number',
  body: withEntry(2, entry('#FF0000', 33.34)),
  path: `${PATH}[2].ratio`,
  problem: /^must be a string$/,
});

const BAD_SUMS: [string[], string][] = [
  [['33.33%', '33.33%', '33.33%'], '99.99%'],
  [['33.33%', '33.33%', '33.35%'], '100.01%'],
  [['30.00%', '30.00%', '30.00%'], '90.00%'],
  [['100.00%', '50.00%', '50.00%'], '200.00%'],
  [['0.01%', '0.01%', '0.01%'], '0.03%'],
];
for (const [ratios, shown] of BAD_SUMS) {
  rejected.push({
    name: `ratios ${ratios.join(' + ')} summing to ${shown}`,
    body: modelABody({ color_palette: palette(...ratios) }),
    path: PATH,
    problem: new RegExp(`^ratios must sum to 100\\.00%, got ${shown.replace('.', '\\.')}$`),
  });
}

acceptedByValidator('model A color_palette: accepted', accepted);
rejectedOverHttp('model A color_palette: rejected', rejected);
