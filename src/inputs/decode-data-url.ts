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
 * Checks the payload of a data URL strictly without holding its bytes: standard alphabet, `=`
 * padding to a multiple of 4 characters, no whitespace, no URL-safe characters, zero trailing
 * bits. Returns the number of bytes it decodes to. The length is checked before any other work,
 * so an oversized payload costs nothing.
 */
export function checkBase64Payload(base64: string, path: string, maxBytes: number): number {
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
  if (!decodesWhole(base64)) throw invalidBase64(path, OUTSIDE_ALPHABET);
  if (padding !== 0 && hasTrailingBits(base64, padding)) {
    throw invalidBase64(path, 'has non-zero bits in its padding');
  }
  return (base64.length / 4) * 3 - padding;
}

/** Checks the payload as checkBase64Payload does, then decodes all of it. */
export function decodeBase64Payload(base64: string, path: string, maxBytes: number): Buffer {
  checkBase64Payload(base64, path, maxBytes);
  return Buffer.from(base64, 'base64');
}

/**
 * The first bytes of a payload that checkBase64Payload accepted: at least `byteCount` of them,
 * or all when it has fewer.
 */
export function decodeBase64Head(base64: string, byteCount: number): Buffer {
  return Buffer.from(base64.slice(0, Math.ceil(byteCount / 3) * 4), 'base64');
}

/** Characters decoded per step into SCRATCH; a multiple of 4, so that only the last step has padding. */
const STEP_CHARACTERS = 64 * 1024;
const SCRATCH = Buffer.allocUnsafeSlow((STEP_CHARACTERS / 4) * 3);

/**
 * Whether every character of the (ASCII, well-padded) text is in the alphabet. Every character
 * the decoder skips makes its output shorter than the text promises, so a step whose output falls
 * short holds one. The bytes go to one small scratch buffer and are dropped: nothing here grows
 * with the payload.
 */
function decodesWhole(base64: string): boolean {
  for (let start = 0; start < base64.length; start += STEP_CHARACTERS) {
    const step = base64.slice(start, start + STEP_CHARACTERS);
    const padding = step.endsWith('==') ? 2 : step.endsWith('=') ? 1 : 0;
    if (SCRATCH.write(step, 'base64') !== (step.length / 4) * 3 - padding) return false;
  }
  return true;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** With `==` the last character carries 4 unused bits, with `=` 2; canonical base64 has them 0. */
function hasTrailingBits(base64: string, padding: 1 | 2): boolean {
  const lastValue = ALPHABET.indexOf(base64.charAt(base64.length - padding - 1));
  const unusedBits = padding === 2 ? 0b1111 : 0b11;
  return (lastValue & unusedBits) !== 0;
}
