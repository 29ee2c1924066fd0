import { createHmac, timingSafeEqual } from 'node:crypto';

/** docs/api.md §5.3: a generated image's URL is valid for 24 hours. */
export const IMAGE_URL_VALIDITY_SECONDS = 24 * 60 * 60;

/** Ids are the store's (see BlobStore.putNew); the signature, not the pattern, vouches for them. */
const FILE_PATTERN = /^([A-Za-z0-9_-]{16,64})\.png$/;
const EXPIRES_PATTERN = /^[1-9][0-9]{0,11}$/;
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** One stored image as its URL names it. */
export interface SignedImage {
  id: string;
  /** Unix seconds after which the URL no longer serves. */
  expiresAt: number;
}

export type ImageUrlProblem = 'malformed' | 'bad-signature' | 'expired';

export type ImageUrlCheck =
  | { ok: true; image: SignedImage; secondsLeft: number }
  | { ok: false; problem: ImageUrlProblem; message: string };

export interface ImageUrlSignerOptions {
  /** `deriveKeys(secret).imageUrlSigning`. */
  signingKey: Uint8Array;
  /**
   * E.g. `https://images.example.com`; a function when the base is known only once the server
   * listens (port 0).
   */
  publicBaseUrl: string | (() => string);
  /**
   * Other origins whose URLs of this form are ours too: the hosts an answer may name instead of
   * the base (the signature does not cover the host). None when absent.
   */
  isOtherOrigin?: (origin: string) => boolean;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

/**
 * Issues and checks `<base>/images/<id>.png?expires=<unix seconds>&signature=<HMAC>`. The HMAC
 * covers id and expiry, so neither can be changed; it is compared in constant time.
 */
export class ImageUrlSigner {
  private readonly signingKey: Uint8Array;
  private readonly publicBaseUrl: () => string;
  private readonly isOtherOrigin: (origin: string) => boolean;
  private readonly now: () => number;

  constructor(options: ImageUrlSignerOptions) {
    if (options.signingKey.length < 16)
      throw new RangeError('the image URL signing key must be at least 16 bytes');
    this.signingKey = options.signingKey;
    const base = options.publicBaseUrl;
    this.publicBaseUrl =
      typeof base === 'string' ? () => base.replace(/\/+$/, '') : () => base().replace(/\/+$/, '');
    this.isOtherOrigin = options.isOtherOrigin ?? (() => false);
    this.now = options.now ?? Date.now;
  }

  /** When a URL issued now expires (unix seconds): 24 hours from now. */
  expiresAtFromNow(): number {
    return this.nowSeconds() + IMAGE_URL_VALIDITY_SECONDS;
  }

  urlOf(image: SignedImage): string {
    const expires = String(image.expiresAt);
    return `${this.publicBaseUrl()}/images/${image.id}.png?expires=${expires}&signature=${this.signatureOf(image.id, expires)}`;
  }

  /** Checks the last path segment (`<id>.png`) and the query values of a request. */
  check(file: string, expires: unknown, signature: unknown): ImageUrlCheck {
    const id = FILE_PATTERN.exec(file)?.[1];
    if (id === undefined)
      return { ok: false, problem: 'malformed', message: 'no image has this name' };
    if (typeof expires !== 'string' || !EXPIRES_PATTERN.test(expires))
      return {
        ok: false,
        problem: 'malformed',
        message: 'image URL lacks a valid expires parameter',
      };
    const given = Buffer.from(typeof signature === 'string' ? signature : '');
    const expected = Buffer.from(this.signatureOf(id, expires));
    if (
      typeof signature !== 'string' ||
      !SIGNATURE_PATTERN.test(signature) ||
      !timingSafeEqual(given, expected)
    )
      return {
        ok: false,
        problem: 'bad-signature',
        message: 'image URL signature does not match; the URL was altered or not issued here',
      };
    const expiresAt = Number(expires);
    const secondsLeft = expiresAt - this.nowSeconds();
    if (secondsLeft <= 0)
      return {
        ok: false,
        problem: 'expired',
        message: `image URL expired at ${new Date(expiresAt * 1000).toISOString()}`,
      };
    return { ok: true, image: { id, expiresAt }, secondsLeft };
  }

  /**
   * Checks a whole URL if it is one of ours (it starts with `<base>/images/`, or with that path
   * under another of our origins); undefined when it is not, so the caller can treat it as any
   * other URL.
   */
  checkUrl(url: string): ImageUrlCheck | undefined {
    const base = this.baseOf(url);
    if (base === undefined) return undefined;
    const prefix = `${base}/images/`;
    const parsed = new URL(url);
    const file = parsed.pathname.slice(parsed.pathname.lastIndexOf('/') + 1);
    if (`${parsed.origin}${parsed.pathname}` !== `${prefix}${file}`)
      return { ok: false, problem: 'malformed', message: 'no image has this name' };
    return this.check(
      file,
      parsed.searchParams.get('expires') ?? undefined,
      parsed.searchParams.get('signature') ?? undefined,
    );
  }

  /** The base or other origin of ours that `url` names its image under, if any. */
  private baseOf(url: string): string | undefined {
    const base = this.publicBaseUrl();
    if (url.startsWith(`${base}/images/`)) return base;
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      return undefined;
    }
    return url.startsWith(`${origin}/images/`) && this.isOtherOrigin(origin) ? origin : undefined;
  }

  private signatureOf(id: string, expires: string): string {
    return createHmac('sha256', this.signingKey).update(`${id}\n${expires}`).digest('base64url');
  }

  private nowSeconds(): number {
    return Math.floor(this.now() / 1000);
  }
}
