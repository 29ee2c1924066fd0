// What the benches that load a gateway process with large bodies share: the bodies, the POST,
// the tally of answers, and the process's resident memory.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { loadavg } from 'node:os';
import sharp from 'sharp';
import { GENERATION_URL, modelABody } from '../test/helpers/requests.js';

export const MB = 1024 * 1024;
/** Each input image's side: a noise PNG of 2536 x 2536 x 3 bytes is 18.4 MiB, under 20 MiB. */
const NOISE_SIDE = 2536;

/** A generation POST on a connection of its own: its status and error code, or none. */
export interface Answer {
  status: number | 'connection lost' | 'timed out';
  code: string | undefined;
  ms: number;
}

export function postGeneration(
  gateway: { url: string; authorization: string },
  body: Buffer,
  timeoutMs = 300_000,
): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const settle = (status: Answer['status'], code?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, code, ms: performance.now() - started });
    };
    const request = httpRequest(`${gateway.url}${GENERATION_URL}`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: gateway.authorization,
        'content-type': 'application/json',
        'content-length': body.length,
      },
    });
    const timer = setTimeout(() => {
      settle('timed out');
      request.destroy();
    }, timeoutMs);
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () => {
        const status = response.statusCode ?? 0;
        settle(status, status === 200 ? undefined : errorCodeOf(text));
        request.destroy();
      });
      response.on('error', () => settle(response.statusCode ?? 0));
    });
    // A refusal answered before the body was read ends our upload with EPIPE or a reset.
    request.on('error', () => settle('connection lost'));
    request.end(body);
  });
}

export function errorCodeOf(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

/** "200: 2, 503 Overloaded: 14". */
export function tally(
  answers: readonly { status: number | string; code?: string | undefined }[],
): string {
  const counts = new Map<string, number>();
  for (const { status, code } of answers) {
    const key = code === undefined ? String(status) : `${status} ${code}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([key, count]) => `${key}: ${count}`).join(', ');
}

export const SMALL_BODY = Buffer.from(JSON.stringify(modelABody()));

/** A noise PNG of `side` x `side`, which compresses to nothing, as a data URL. */
const noiseDataUrls = new Map<number, string>();
async function noiseDataUrl(side: number): Promise<string> {
  const known = noiseDataUrls.get(side);
  if (known !== undefined) return known;
  const png = await sharp(randomBytes(side * side * 3), {
    raw: { width: side, height: side, channels: 3 },
  })
    .png({ compressionLevel: 0 })
    .toBuffer();
  const url = `data:image/png;base64,${png.toString('base64')}`;
  noiseDataUrls.set(side, url);
  return url;
}

/** A model A body with `images` copies of one noise PNG of `side` x `side` pixels. */
export async function bodyWithImages(images: number, side = NOISE_SIDE): Promise<Buffer> {
  const image = await noiseDataUrl(side);
  return Buffer.from(
    JSON.stringify(
      modelABody(undefined, [
        ...Array.from({ length: images }, () => ({ image })),
        { text: 'the same picture, calmer' },
      ]),
    ),
  );
}

/** The gateway process's resident memory now and its high-water mark, from /proc. */
export async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kilobytes = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: (kilobytes('VmRSS') * 1024) / MB, peak: (kilobytes('VmHWM') * 1024) / MB };
}

/** The machine's 1-minute load average, as the rows' notes give it. */
export const load = () => `load ${loadavg()[0]?.toFixed(1)}`;

/**
 * Sends `requests` POSTs of `body` at once, each on a connection of its own, and samples the
 * gateway's resident memory every 50 ms meanwhile: the answers, how long they took, and the peak
 * (the higher of the samples and the kernel's high-water mark), in MiB.
 */
export async function burstOf(
  gateway: { url: string; authorization: string; pid: number },
  requests: number,
  body: Buffer,
): Promise<{ answers: Answer[]; seconds: number; peak: number }> {
  let sampled = (await memoryOf(gateway.pid)).rss;
  const sampler = setInterval(() => {
    void memoryOf(gateway.pid).then(
      ({ rss }) => {
        sampled = Math.max(sampled, rss);
      },
      () => undefined,
    );
  }, 50);
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: requests }, () => postGeneration(gateway, body)),
  );
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  return { answers, seconds, peak: Math.max(sampled, (await memoryOf(gateway.pid)).peak) };
}
