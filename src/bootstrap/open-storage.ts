import type { DerivedKeys } from '../auth/keys.js';
import type { Config } from '../config/config.js';
import type { PublicOrigins } from '../http/public-origins.js';
import { createResultStorage, type ResultStorage } from '../storage/create-result-storage.js';

export interface StorageOptions {
  config: Config;
  /** The origin image URLs and upload certificates name, and the others that count as ours. */
  origins: PublicOrigins;
  keys: DerivedKeys;
  now: () => number;
}

/** Where generated images and uploads live, and the signed URLs that lead to them. */
export function openStorage(options: StorageOptions): ResultStorage {
  const { config, origins, keys, now } = options;
  return createResultStorage({
    storage: config.storage,
    publicBaseUrl: () => origins.canonical(),
    isOtherOrigin: (origin) => origins.isAllowedOrigin(origin),
    signingKey: keys.imageUrlSigning,
    uploadSigningKey: keys.uploadSigning,
    sweepIntervalMs: config.sweepIntervalMs,
    now,
  });
}
