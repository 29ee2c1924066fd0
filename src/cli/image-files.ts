import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { GatewayTransportError } from '../client/answer-error.js';

/** Called as an image's bytes arrive. */
export type DownloadProgress = (received: number, total: number | undefined) => void;

/**
 * Downloads image `index` of request `requestId` into `dir` as `imagegate-<request>-<index>.png`,
 * or with a further `-2`, `-3` when that name exists: a file is never overwritten. Answers the path.
 */
export async function saveImage(
  url: string,
  dir: string,
  requestId: string,
  index: number,
  onProgress: DownloadProgress,
  signal?: AbortSignal,
): Promise<string> {
  const response = await fetch(url, { signal });
  if (!response.ok || response.body === null)
    throw new GatewayTransportError(`downloading image ${index} answered ${response.status}`);
  const length = Number(response.headers.get('content-length'));
  const total = Number.isFinite(length) && length > 0 ? length : undefined;
  const { file, stream } = await createUnique(dir, `imagegate-${safe(requestId)}-${index}`);
  try {
    let received = 0;
    for await (const chunk of response.body) {
      received += chunk.byteLength;
      onProgress(received, total);
      if (!stream.write(chunk)) await once(stream, 'drain');
    }
    stream.end();
    await once(stream, 'close');
    return file;
  } catch (error) {
    stream.destroy();
    await rm(file, { force: true });
    throw error;
  }
}

function safe(requestId: string): string {
  const cleaned = requestId.replace(/[^A-Za-z0-9._-]/g, '_');
  return cleaned === '' ? String(Date.now()) : cleaned;
}

async function createUnique(
  dir: string,
  stem: string,
): Promise<{ file: string; stream: WriteStream }> {
  for (let attempt = 1; ; attempt += 1) {
    const file = path.join(dir, `${stem}${attempt === 1 ? '' : `-${attempt}`}.png`);
    const stream = createWriteStream(file, { flags: 'wx' });
    try {
      await once(stream, 'open');
      return { file, stream };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}
