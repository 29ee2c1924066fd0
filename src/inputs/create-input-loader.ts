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
}

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

  async function loadOne(image: InputImage, signal: AbortSignal): Promise<LoadedImage> {
    const { source, path } = image;
    const bytes =
      source.kind === 'data'
        ? decodeBase64Payload(source.base64, path, settings.maxBytes)
        : await fetchImage(source.url, path, settings, signal);
    return checkImage(bytes, path, settings.maxBytes);
  }

  return {
    async load(images: readonly InputImage[], signal: AbortSignal): Promise<LoadedImage[]> {
      signal.throwIfAborted();
      // The first failure decides the answer, so the other fetches are stopped rather than awaited.
      const siblings = new AbortController();
      const loadSignal = AbortSignal.any([signal, siblings.signal]);
      try {
        return await Promise.all(images.map((image) => loadOne(image, loadSignal)));
      } catch (error) {
        siblings.abort();
        throw error;
      }
    },
  };
}
