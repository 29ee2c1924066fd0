import type { InputImage } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';
import { addressPolicy, resolveWithSystemDns } from './address-guard.js';
import { checkImage } from './check-image.js';
import { decodeBase64Payload } from './decode-data-url.js';
import { type FetchSettings, fetchImage } from './fetch-image.js';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_MAX_IMAGE_BYTES,
  DEFAULT_MAX_REDIRECTS,
  DEFAULT_TOTAL_TIMEOUT_MS,
} from './image-limits.js';
import type { InputLoader } from './input-loader.js';
import { Semaphore } from '../support/semaphore.js';

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
}

/** URL fetches under way at once for one request: nine images never open nine downloads. */
const FETCHES_PER_REQUEST = 3;
const DEFAULT_MAX_CONCURRENT_FETCHES = 32;

/** Builds the inputs stage from operator settings. */
export function createInputLoader(options: InputLoaderOptions): InputLoader {
  const settings: FetchSettings = {
    policy: addressPolicy(options.allowPrivateAddresses),
    resolveHost: resolveWithSystemDns,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    totalTimeoutMs: options.totalTimeoutMs ?? DEFAULT_TOTAL_TIMEOUT_MS,
    maxBytes: options.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES,
    maxRedirects: options.maxRedirects ?? DEFAULT_MAX_REDIRECTS,
  };

  const processFetches = new Semaphore(
    options.maxConcurrentFetches ?? DEFAULT_MAX_CONCURRENT_FETCHES,
  );

  async function loadOne(
    image: InputImage,
    requestFetches: Semaphore,
    signal: AbortSignal,
  ): Promise<LoadedImage> {
    const { source, path } = image;
    const bytes =
      source.kind === 'data'
        ? decodeBase64Payload(source.base64, path, settings.maxBytes)
        : await requestFetches.run(
            () => processFetches.run(() => fetchImage(source.url, path, settings, signal), signal),
            signal,
          );
    return checkImage(bytes, path, settings.maxBytes);
  }

  return {
    async load(images: readonly InputImage[], signal: AbortSignal): Promise<LoadedImage[]> {
      signal.throwIfAborted();
      // The first failure decides the answer, so the other fetches are stopped rather than awaited.
      const siblings = new AbortController();
      const loadSignal = AbortSignal.any([signal, siblings.signal]);
      try {
        const requestFetches = new Semaphore(FETCHES_PER_REQUEST);
        return await Promise.all(images.map((image) => loadOne(image, requestFetches, loadSignal)));
      } catch (error) {
        siblings.abort();
        throw error;
      }
    },
  };
}
