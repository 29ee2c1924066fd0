import { randomBase64Url } from '../support/random-pool.js';
import type { BlobKey } from './blob-store.js';

/** 144 random bits: a whole number of base64url characters (24), so every id has one spelling. */
const ID_BYTES = 18;

const SECONDS_PER_HOUR = 3600;
/**
 * `2025-11-24T13`: the UTC hour in which every image of the folder expires; uploads have the same
 * folders behind `uploads-`, so they can be told apart (and listed) in the bucket.
 */
const FOLDER_PATTERN = /^(?:uploads-)?([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2})$/;
const UPLOADS_FOLDER_PREFIX = 'uploads-';

/** The folder of images that expire within the UTC hour of `expiresAt` (unix seconds). */
export function expiryFolderOf(expiresAt: number): string {
  const hourStart = Math.floor(expiresAt / SECONDS_PER_HOUR) * SECONDS_PER_HOUR;
  // Every image stored within an hour shares the folder: its name is made once, not per image.
  if (hourStart !== lastFolder.hourStart)
    lastFolder = { hourStart, name: new Date(hourStart * 1000).toISOString().slice(0, 13) };
  return lastFolder.name;
}

let lastFolder = { hourStart: Number.NaN, name: '' };

/** Every generated image is a PNG. */
export const IMAGE_EXTENSION = '.png';

/** A fresh, unguessable id for an object stored in a file of its own. */
export function newImageId(): string {
  return randomBase64Url(ID_BYTES);
}

/**
 * Images live in folders named after the hour they expire in, so the sweeper removes a whole
 * folder once its hour is over, without reading any object's metadata.
 */
export function objectKeyOf(id: string, expiresAt: number): BlobKey {
  return `${expiryFolderOf(expiresAt)}/${id}${IMAGE_EXTENSION}`;
}

/** Where an uploaded file lives: `name` is derived from its whole key (see upload-store.ts). */
export function uploadObjectKeyOf(name: string, expiresAt: number): BlobKey {
  return `${UPLOADS_FOLDER_PREFIX}${expiryFolderOf(expiresAt)}/${name}`;
}

/**
 * When every image in the folder has expired (unix seconds): the end of its hour. Undefined for
 * a folder this layout did not make, which the sweeper leaves alone.
 */
export function folderExpiredAt(folder: string): number | undefined {
  const match = FOLDER_PATTERN.exec(folder);
  if (match === null) return undefined;
  const [, year, month, day, hour] = match.map(Number);
  if (year === undefined || month === undefined || day === undefined || hour === undefined)
    return undefined;
  const hourStart = Date.UTC(year, month - 1, day, hour) / 1000;
  // Date.UTC rolls 2025-02-30 over into March; only a folder this layout writes is accepted.
  const hourFolder = folder.startsWith(UPLOADS_FOLDER_PREFIX)
    ? folder.slice(UPLOADS_FOLDER_PREFIX.length)
    : folder;
  if (expiryFolderOf(hourStart) !== hourFolder) return undefined;
  return hourStart + SECONDS_PER_HOUR;
}
