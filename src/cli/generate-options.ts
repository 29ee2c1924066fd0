import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MODEL_A } from '../domain/models.js';
import type { Box, ImageRequest, InputImage, PaletteEntry } from '../client/image-request.js';
import { CONNECTION_OPTIONS, CONNECTION_USAGE } from './client-settings.js';
import { UsageError } from './usage-error.js';

export const GENERATE_USAGE = `  imagegate generate "PROMPT" [-m MODEL] [--image FILE_OR_URL [--bbox x1,y1,x2,y2 ...] ...]
                    [--size 2K] [-n N] [--seed N] [--sequential] [--palette '#RRGGBB:NN.NN%,...']
                    [--watermark] [--async | --openai] [-o DIR] [--json] [connection]
    Generates images on a running gateway and saves them as PNGs (docs/cli.md).`;

const GENERATE_OPTIONS = {
  model: { type: 'string', short: 'm', default: MODEL_A },
  image: { type: 'string', multiple: true },
  bbox: { type: 'string', multiple: true },
  size: { type: 'string' },
  n: { type: 'string', short: 'n' },
  seed: { type: 'string' },
  sequential: { type: 'boolean', default: false },
  palette: { type: 'string' },
  watermark: { type: 'boolean', default: false },
  async: { type: 'boolean', default: false },
  openai: { type: 'boolean', default: false },
  output: { type: 'string', short: 'o', default: '.' },
  json: { type: 'boolean', default: false },
  ...CONNECTION_OPTIONS,
} as const;

/** How the request travels: SSE on the DashScope door, a task, or the OpenAI door. */
export type GenerateMode = 'stream' | 'async' | 'openai';

export interface GenerateOptions {
  request: ImageRequest;
  mode: GenerateMode;
  outputDir: string;
  json: boolean;
  connection: { url?: string; token?: string };
}

export function generateUsage(): string {
  return `usage:\n${GENERATE_USAGE}\nconnection:\n${CONNECTION_USAGE}`;
}

/** Reads `imagegate generate`'s arguments; a mistake is a UsageError (exit 2). */
export function readGenerateOptions(args: string[]): GenerateOptions {
  const usage = generateUsage();
  const fail = (message: string): never => {
    throw new UsageError(`generate: ${message}`, usage);
  };
  let parsed;
  try {
    parsed = parseArgs({ args, options: GENERATE_OPTIONS, allowPositionals: true, tokens: true });
  } catch (error) {
    return fail((error as Error).message);
  }
  const { values, positionals, tokens } = parsed;
  if (positionals.length !== 1 || positionals[0]!.trim() === '')
    fail('give the prompt, in quotes, as the one argument');
  if (values.async && values.openai) fail('give one of --async and --openai');
  const images: InputImage[] = [];
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    if (token.name === 'image') images.push({ source: imageSource(token.value!, fail), boxes: [] });
    if (token.name === 'bbox') {
      const image = images.at(-1);
      if (image === undefined) fail('--bbox applies to the --image before it; give that first');
      image!.boxes.push(boxOf(token.value!, fail));
    }
  }
  const request: ImageRequest = {
    model: values.model,
    prompt: positionals[0]!,
    images,
    size: values.size,
    n: integerOf('-n', values.n, fail),
    seed: integerOf('--seed', values.seed, fail),
    sequential: values.sequential,
    palette: values.palette === undefined ? undefined : paletteOf(values.palette, fail),
    watermark: values.watermark,
  };
  return {
    request,
    mode: values.async ? 'async' : values.openai ? 'openai' : 'stream',
    outputDir: values.output,
    json: values.json,
    connection: { url: values.url, token: values.token },
  };
}

function imageSource(value: string, fail: (message: string) => never): string {
  if (/^(https?:|data:|oss:\/\/)/i.test(value)) return value;
  const local = value.startsWith('file://') ? decodeURIComponent(new URL(value).pathname) : value;
  if (!existsSync(local)) fail(`--image ${value}: no such file`);
  return local;
}

function boxOf(value: string, fail: (message: string) => never): Box {
  const parts = value.split(',').map((part) => part.trim());
  if (parts.length !== 4 || parts.some((part) => !/^[0-9]{1,9}$/.test(part)))
    fail(`--bbox must be four whole numbers x1,y1,x2,y2, got "${value}"`);
  return parts.map(Number) as Box;
}

function integerOf(
  flag: string,
  value: string | undefined,
  fail: (message: string) => never,
): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,10}$/.test(value)) fail(`${flag} must be a whole number, got "${value}"`);
  return Number(value);
}

/**
 * `#112233:40.00%,#445566:60.00%` as palette entries. Only the shape is read here; the gateway
 * judges the colours and ratios, so its message is the one the user sees.
 */
function paletteOf(value: string, fail: (message: string) => never): PaletteEntry[] {
  return value.split(',').map((entry) => {
    const colon = entry.lastIndexOf(':');
    if (colon < 0) fail(`--palette entries are HEX:RATIO, such as #112233:40.00%, got "${entry}"`);
    return { hex: entry.slice(0, colon).trim(), ratio: entry.slice(colon + 1).trim() };
  });
}
