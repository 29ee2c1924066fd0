import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { createRouter } from '../../src/channels/create-router.js';
import type { ReloadableRouter } from '../../src/channels/reloadable-router.js';
import type { ChannelConfig } from '../../src/config/channel-config.js';
import { readChannels } from '../../src/config/read-channels.js';
import type { LoadedImage } from '../../src/domain/loaded-image.js';
import type { Engine, EngineJob, PngImage } from '../../src/engine/engine.js';
import { outputSize } from '../../src/generation/output-size.js';
import {
  createResultStorage,
  type ResultStorage,
} from '../../src/storage/create-result-storage.js';
import { validateRequest } from '../../src/validate/validate-request.js';

export const MODEL_A = 'gen-2.7-image-pro';
export const MODEL_B = 'txt-image-2.0-pro';

type ContentItem = { text: string } | { image: string };

/** A request body: `imageCount` image items (data URLs of a tiny PNG) and one text item. */
export function requestBody(
  model: string,
  parameters: Record<string, unknown> = {},
  images: string[] = [],
  prompt = 'a lighthouse at dusk',
): object {
  const content: ContentItem[] = [...images.map((image) => ({ image })), { text: prompt }];
  return { model, input: { messages: [{ role: 'user', content }] }, parameters };
}

/** An EngineJob as the pipeline builds it: validated request, loaded inputs, decided size and seed. */
export function jobFor(
  body: object,
  options: { inputs?: LoadedImage[]; signal?: AbortSignal; seed?: number; requestId?: string } = {},
): EngineJob {
  const request = validateRequest(structuredClone(body));
  const inputs = options.inputs ?? [];
  return {
    request,
    inputs,
    output: outputSize(request, inputs),
    seed: options.seed ?? request.parameters.seed ?? 4242,
    requestId: options.requestId ?? `req-${randomBytes(4).toString('hex')}`,
    signal: options.signal ?? new AbortController().signal,
  };
}

export async function loadedPng(
  width: number,
  height: number,
  jsonPath: string,
): Promise<LoadedImage> {
  const bytes = await sharp({
    create: { width, height, channels: 3, background: { r: 10, g: 120, b: 60 } },
  })
    .png()
    .toBuffer();
  return { path: jsonPath, format: 'png', width, height, bytes: () => bytes };
}

/** Channel configurations from config-file entries, failing the test on any problem. */
export function channels(entries: unknown[], env: Record<string, string> = {}): ChannelConfig[] {
  const problems: string[] = [];
  const configs = readChannels(entries, env, 'test.yaml: channels', problems);
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return configs;
}

/** Real result storage on a temporary disk directory, as the gateway uses it. */
export async function temporaryStorage(): Promise<ResultStorage & { dispose(): Promise<void> }> {
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-channels-'));
  const storage = createResultStorage({
    storage: { kind: 'disk', dataDir: directory },
    publicBaseUrl: 'http://gateway.test',
    signingKey: randomBytes(32),
    uploadSigningKey: randomBytes(32),
    sweepIntervalMs: 0,
  });
  return {
    ...storage,
    dispose: async () => {
      await storage.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

export function routerFor(
  configs: ChannelConfig[],
  options: {
    storage: ResultStorage;
    deadlineMs?: number;
    now?: () => number;
    monotonicNow?: () => number;
    random?: () => number;
    localEngine?: () => Engine<PngImage>;
  },
): ReloadableRouter {
  return createRouter(
    { channels: configs, routingDeadlineMs: options.deadlineMs ?? 60_000 },
    {
      results: options.storage.results,
      ...(options.now === undefined ? {} : { now: options.now }),
      ...(options.monotonicNow === undefined ? {} : { monotonicNow: options.monotonicNow }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.localEngine === undefined ? {} : { createLocalEngine: options.localEngine }),
    },
  );
}

/** A deterministic random source (mulberry32), so weighted choices are reproducible. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
