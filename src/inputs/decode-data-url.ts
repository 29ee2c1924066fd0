import type { GatewayError } from '../errors/gateway-error.js';
import { imageTooLarge, invalidImage } from './input-errors.js';

function invalidBase64(path: string, problem: string): GatewayError {
  return invalidImage(path, `the base64 data ${problem}`);
}

const OUTSIDE_ALPHABET = 'contains characters outside the base64 alphabet';

/** The longest base64 text whose decoded bytes can still fit in `maxBytes`. */
export function maxBase64Length(maxBytes: number): number {
  return Math.ceil(maxBytes / 3) * 4;
}

/**
 * Decodes the payload of a data URL once, strictly: standard alphabet, `=` padding to a multiple
 * of 4 characters, no whitespace, no URL-safe characters, zero trailing bits. The length is
 * checked before anything is allocated, so an oversized payload costs nothing.
 */
export function decodeBase64Payload(base64: string, path: string, maxBytes: number): Buffer {
  if (base64.length > maxBase64Length(maxBytes)) {
    throw imageTooLarge(path, maxBytes, `the base64 data is ${base64.length} characters`);
  }
  if (base64.length === 0) throw invalidBase64(path, 'is empty');
  if (base64.length % 4 !== 0) {
    throw invalidBase64(path, 'is not a multiple of 4 characters long (missing or extra padding)');
  }
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  const firstEquals = base64.indexOf('=');
  if (firstEquals !== -1 && firstEquals < base64.length - padding) {
    throw invalidBase64(path, `has padding (=) inside the data, at character ${firstEquals}`);
  }
  // Buffer's decoder is lenient: it accepts the URL-safe alphabet, truncates characters above
  // U+00FF to their low byte, and skips or stops at anything else. The first two are refused
  // here with fast native scans; the rest shorten the output, which the length check catches.
  // A character loop in JavaScript would cost several times the decode itself.
  if (Buffer.byteLength(base64, 'utf8') !== base64.length) {
    throw invalidBase64(path, 'contains non-ASCII characters');
  }
  if (base64.includes('-') || base64.includes('_')) throw invalidBase64(path, OUTSIDE_ALPHABET);

  const bytes = Buffer.from(base64, 'base64');
  const expectedLength = (base64.length / 4) * 3 - padding;
  if (bytes.length !== expectedLength) {
    throw invalidBase64(path, OUTSIDE_ALPHABET);
  }
  if (padding !== 0 && hasTrailingBits(base64, padding)) {
    throw invalidBase64(path, 'has non-zero bits in its padding');
  }
  return bytes;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** With `==` the last character carries 4 unused bits, with `=` 2; canonical base64 has them 0. */
function hasTrailingBits(base64: string, padding: 1 | 2): boolean {
  const lastValue = ALPHABET.indexOf(base64.charAt(base64.length - padding - 1));
  const unusedBits = padding === 2 ? 0b1111 : 0b11;
  return (lastValue & unusedBits) !== 0;
}
