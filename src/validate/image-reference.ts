import type { ImageSource } from '../domain/generation-request.js';
import { GatewayError } from '../errors/gateway-error.js';

const MAX_URL_LENGTH = 8192;
const OSS_SCHEME = 'oss://';
const DATA_URL_HEADER = /^data:([A-Za-z0-9.+-]+\/[A-Za-z0-9.+-]+);base64,/i;

/**
 * Reads the form of an `image` string without touching its payload: a data URL keeps its base64
 * text as a slice of the original string, to be decoded once by the inputs stage.
 */
export function readImageReference(value: string, path: string): ImageSource {
  // URL schemes are case-insensitive (RFC 3986), so DATA: is a data URL too.
  if (value.slice(0, 5).toLowerCase() === 'data:') {
    const header = DATA_URL_HEADER.exec(value.slice(0, 200));
    if (header === null) {
      throw new GatewayError(
        'InvalidImage',
        `${path}: must be of the form data:<MIME_type>;base64,<base64_data>`,
      );
    }
    const declaredMime = (header[1] as string).toLowerCase();
    if (!declaredMime.startsWith('image/')) {
      throw new GatewayError(
        'InvalidImage',
        `${path}: declares MIME type ${declaredMime}, which is not an image`,
      );
    }
    if (value.length === header[0].length) {
      throw new GatewayError('InvalidImage', `${path}: the base64 data is empty`);
    }
    return { kind: 'data', declaredMime, base64: value.slice(header[0].length) };
  }
  if (value.slice(0, OSS_SCHEME.length).toLowerCase() === OSS_SCHEME) {
    // Only the form is checked here: whether the key names this caller's upload, and whether the
    // request asked for oss:// resolution at all, is for the inputs stage.
    const key = value.slice(OSS_SCHEME.length);
    if (key === '' || value.length > MAX_URL_LENGTH) {
      throw new GatewayError(
        'InvalidURL',
        `${path}: must be oss://<key> with a key of 1 to ${MAX_URL_LENGTH - OSS_SCHEME.length} characters`,
      );
    }
    return { kind: 'oss', key };
  }
  if (value.length > MAX_URL_LENGTH) {
    throw new GatewayError(
      'InvalidURL',
      `${path}: URL is longer than ${MAX_URL_LENGTH} characters`,
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new GatewayError(
      'InvalidURL',
      `${path}: must be an http(s) URL, an oss://<key> of an upload or a data:<MIME_type>;base64,<data> URL`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new GatewayError(
      'InvalidURL',
      `${path}: scheme ${url.protocol.slice(0, -1)} is not allowed, use http, https or oss`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new GatewayError('InvalidURL', `${path}: credentials in image URLs are not allowed`);
  }
  return { kind: 'url', url: url.href };
}
