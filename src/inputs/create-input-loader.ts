import type { InputImage } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';
import type { StoredInputRead, StoredInputs, UploadAccess } from '../domain/stored-inputs.js';
import { addressPolicy, resolveWithSystemDns } from './address-guard.js';
import { checkImage } from './check-image.js';
import { type FetchSettings, fetchImage } from './fetch-image.js';
import { bytesInMemory, bytesOfBase64, type ImageBytes } from './image-bytes.js';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_MAX_IMAGE_BYTES,
  DEFAULT_MAX_REDIRECTS,
  DEFAULT_TOTAL_TIMEOUT_MS,
} from './image-limits.js';
import { imageTooLarge, invalidUrl } from './input-errors.js';
import { type InputLoader, NO_UPLOAD_ACCESS } from './input-loader.js';
import { Semaphore } from '../support/semaphore.js';
import { asAbortSignal, type Cancellation } from '../support/cancellation.js';

export interface InputLoaderOptions {
  /** Lifts the address guard for loopback, private and link-local targets (never metadata). */
  allowPrivateAddresses: boolean;
  /** Per connection attempt; default 5000. */
  connectTimeoutMs?: number;
  /** Per image URL, from the first DNS lookup to the last body byte; default 20000. */
  totalTimeoutMs?: number;
  /** Per image, decoded; default 20 MiB. */
  maxBytes?: number;
  /** Default 3. */
  maxRedirects?: number;
  /** URL fetches under way at once in this process; default 32. */
  maxConcurrentFetches?: number;
  /**
   * Uploads and the gateway's own result URLs, read from storage. Absent: `oss://` keys are
   * refused and every URL is fetched.
   */
  stored?: StoredInputs;
}

/** The inputs stage, and what its URL fetches hold for GET /metrics to read. */
export interface FetchingInputLoader extends InputLoader {
  /**
   * URL fetches under way in this process now, and fetches waiting for a place among them
   * (`maxConcurrentFetches`).
   */
  fetches(): { running: number; waiting: number };
}

const OSS_HEADER = 'X-DashScope-OssResourceResolve: enable';

function bytesOf(read: StoredInputRead, path: string, maxBytes: number): Buffer {
  if (read.kind === 'found') return read.bytes;
  if (read.kind === 'too-large') throw imageTooLarge(path, maxBytes, `it has ${read.size} bytes`);
  throw invalidUrl(path, read.problem);
}

/** URL fetches under way at once for one request: nine images never open nine downloads. */
const FETCHES_PER_REQUEST = 3;
const DEFAULT_MAX_CONCURRENT_FETCHES = 32;

/** Builds the inputs stage from operator settings. */
export function createInputLoader(options: InputLoaderOptions): FetchingInputLoader {
  return new SettingsInputLoader(
    {
      policy: addressPolicy(options.allowPrivateAddresses),
      resolveHost: resolveWithSystemDns,
      connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      totalTimeoutMs: options.totalTimeoutMs ?? DEFAULT_TOTAL_TIMEOUT_MS,
      maxBytes: options.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES,
      maxRedirects: options.maxRedirects ?? DEFAULT_MAX_REDIRECTS,
    },
    new Semaphore(options.maxConcurrentFetches ?? DEFAULT_MAX_CONCURRENT_FETCHES),
    options.stored,
  );
}

/** Loads a request's images: inline, uploaded, one of our own results, or fetched by URL. */
class SettingsInputLoader implements FetchingInputLoader {
  constructor(
    private readonly settings: FetchSettings,
    /** URL fetches of the whole process. */
    private readonly processFetches: Semaphore,
    private readonly stored: StoredInputs | undefined,
  ) {}

  fetches(): { running: number; waiting: number } {
    return { running: this.processFetches.holders, waiting: this.processFetches.waiters };
  }

  async load(
    images: readonly InputImage[],
    cancellation: Cancellation,
    uploads: UploadAccess = NO_UPLOAD_ACCESS,
  ): Promise<LoadedImage[]> {
    cancellation.throwIfAborted();
    if (images.length === 0) return [];
    // Fetches, DNS look-ups and the siblings below want a real AbortSignal.
    const signal = asAbortSignal(cancellation);
    // The first failure decides the answer, so the other fetches are stopped rather than awaited.
    const siblings = new AbortController();
    const loadSignal = AbortSignal.any([signal, siblings.signal]);
    try {
      const requestFetches = new Semaphore(FETCHES_PER_REQUEST);
      return await Promise.all(
        images.map((image) => this.loadOne(image, requestFetches, uploads, loadSignal)),
      );
    } catch (error) {
      siblings.abort();
      throw error;
    }
  }

  private async loadOne(
    image: InputImage,
    requestFetches: Semaphore,
    uploads: UploadAccess,
    signal: AbortSignal,
  ): Promise<LoadedImage> {
    const { source, path } = image;
    const { maxBytes } = this.settings;
    const bytes: ImageBytes =
      source.kind === 'data'
        ? bytesOfBase64(source.base64, path, maxBytes)
        : bytesInMemory(
            source.kind === 'upload'
              ? source.bytes
              : source.kind === 'oss'
                ? await this.readUpload(source.key, path, uploads)
                : await this.readUrl(source.url, path, requestFetches, signal),
          );
    return checkImage(bytes, path, maxBytes);
  }

  private async readUpload(key: string, path: string, uploads: UploadAccess): Promise<Buffer> {
    if (!uploads.resolve)
      throw invalidUrl(path, `oss:// keys are resolved only with the header ${OSS_HEADER}`);
    if (this.stored === undefined) throw invalidUrl(path, 'this gateway keeps no uploads');
    if (uploads.owner === undefined)
      throw invalidUrl(path, 'uploads belong to a token id, and this token has none');
    const { maxBytes } = this.settings;
    return bytesOf(await this.stored.readUpload(key, uploads.owner, maxBytes), path, maxBytes);
  }

  private async readUrl(
    url: string,
    path: string,
    requestFetches: Semaphore,
    signal: AbortSignal,
  ): Promise<Buffer> {
    const { maxBytes } = this.settings;
    // One of our own result URLs (a chained edit) is read from storage: no request to ourselves,
    // and no exception to the address guard.
    const own = await this.stored?.readResultUrl(url, maxBytes);
    if (own !== undefined) return bytesOf(own, path, maxBytes);
    return requestFetches.run(
      () => this.processFetches.run(() => fetchImage(url, path, this.settings, signal), signal),
      signal,
    );
  }
}
