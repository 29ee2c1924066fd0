import type { Readable } from 'node:stream';

/** Keeps generated PNGs and hands out signed URLs that are valid for 24 hours. */
export interface ResultStore {
  /** Stores one PNG and returns its signed public URL. */
  save(png: Buffer | Readable): Promise<string>;
}
