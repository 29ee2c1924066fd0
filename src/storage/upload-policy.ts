import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** docs/api.md §12: uploads are kept at least 48 hours, certificates are valid for one hour. */
export const UPLOAD_RETENTION_SECONDS = 48 * 60 * 60;
export const CERTIFICATE_VALIDITY_SECONDS = 60 * 60;
export const MAX_UPLOAD_MB = 20;
export const MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024;
/** The certificate's `oss_access_key_id`; the upload form must send it back unchanged. */
export const UPLOAD_ACCESS_KEY_ID = 'imagegate';

/** Longest file name accepted after `upload_dir/`, in UTF-8 bytes (as most file systems allow). */
const MAX_FILE_NAME_BYTES = 255;
const NONCE_BYTES = 16;
const TAG_BYTES = 16;
/** `uploads/<keep-until unix seconds>.<nonce hex>.<owner tag hex>`. */
const UPLOAD_DIR_PATTERN = /^uploads\/([1-9][0-9]{0,11})\.([0-9a-f]{32})\.([0-9a-f]{32})$/;
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{43}$/;
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/** What getPolicy hands out, before the HTTP layer adds where to post it. */
export interface IssuedCertificate {
  /** base64 of the policy JSON, as OSS has it. */
  policy: string;
  signature: string;
  uploadDir: string;
  expiresInSeconds: number;
}

/** An upload's key, understood: where it is stored and until when. */
export interface UploadKey {
  /** The whole key, `upload_dir/<file name>`. */
  key: string;
  uploadDir: string;
  /** Unix seconds until which the file is kept. */
  keepUntil: number;
  /** Names the stored object: a digest of the whole key, so any file name maps to a safe name. */
  objectName: string;
}

export type UploadKeyCheck = { ok: true; upload: UploadKey } | { ok: false; problem: string };

/** What one certificate may carry in all, whatever the files' names. */
export interface CertificateCapacity {
  bytes: number;
  files: number;
}

/** A certificate as its checked policy tells it. */
export interface CheckedCertificate {
  uploadDir: string;
  /** The id of the token that asked for the certificate. */
  owner: string;
  capacity: CertificateCapacity;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

export type PolicyCheck =
  | ({ ok: true } & CheckedCertificate)
  | { ok: false; reason: 'bad-signature' | 'expired' | 'malformed'; message: string };

/**
 * OSS's policy document, with this gateway's own part: whose certificate it is and what it may
 * carry, signed with the rest, so that an upload (which carries no token) is counted against
 * its token and its certificate.
 */
interface PolicyDocument {
  expiration: string;
  conditions: unknown[];
  imagegate: { token: string; capacity_bytes: number; capacity_files: number };
}

export interface UploadPolicyOptions {
  /** `deriveKeys(secret).uploadSigning`. */
  signingKey: Uint8Array;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

function isPolicyDocument(value: unknown): value is PolicyDocument {
  if (typeof value !== 'object' || value === null) return false;
  return (
    'expiration' in value &&
    typeof value.expiration === 'string' &&
    'conditions' in value &&
    Array.isArray(value.conditions) &&
    'imagegate' in value &&
    isGatewayPart(value.imagegate)
  );
}

function isGatewayPart(value: unknown): value is PolicyDocument['imagegate'] {
  if (typeof value !== 'object' || value === null) return false;
  return (
    'token' in value &&
    typeof value.token === 'string' &&
    'capacity_bytes' in value &&
    Number.isSafeInteger(value.capacity_bytes) &&
    'capacity_files' in value &&
    Number.isSafeInteger(value.capacity_files)
  );
}

/** The `["starts-with", "$key", "<dir>/"]` condition's directory, if the policy has one. */
function uploadDirOf(conditions: unknown[]): string | undefined {
  for (const condition of conditions) {
    if (!Array.isArray(condition) || condition.length !== 3) continue;
    const [operator, field, prefix] = condition as unknown[];
    if (operator === 'starts-with' && field === '$key' && typeof prefix === 'string')
      return prefix.endsWith('/') ? prefix.slice(0, -1) : undefined;
  }
  return undefined;
}

/**
 * Issues and checks upload certificates in OSS's PostObject shape. The policy is signed with a key
 * derived from the gateway's secret; its `upload_dir` is fresh per certificate and carries, signed
 * as well, when its files expire and a tag of the token that asked for it, so that an `oss://` key
 * alone tells (without any lookup) whose upload it is and until when it is kept.
 */
export class UploadPolicySigner {
  private readonly signingKey: Uint8Array;
  private readonly now: () => number;

  constructor(options: UploadPolicyOptions) {
    if (options.signingKey.length < 16)
      throw new RangeError('the upload signing key must be at least 16 bytes');
    this.signingKey = options.signingKey;
    this.now = options.now ?? Date.now;
  }

  /** A certificate for the token `owner`, carrying at most `capacity` (and 20 MiB a file). */
  issue(owner: string, capacity: CertificateCapacity): IssuedCertificate {
    const nowSeconds = this.nowSeconds();
    const expiresAt = nowSeconds + CERTIFICATE_VALIDITY_SECONDS;
    // Counted from the certificate's end, so a file uploaded at its last moment still gets 48 hours.
    const keepUntil = expiresAt + UPLOAD_RETENTION_SECONDS;
    const nonce = randomBytes(NONCE_BYTES).toString('hex');
    const uploadDir = `uploads/${keepUntil}.${nonce}.${this.ownerTag(owner, keepUntil, nonce)}`;
    const document: PolicyDocument = {
      expiration: new Date(expiresAt * 1000).toISOString(),
      conditions: [
        ['content-length-range', 0, Math.min(MAX_UPLOAD_BYTES, capacity.bytes)],
        ['starts-with', '$key', `${uploadDir}/`],
        { 'x-oss-object-acl': 'private' },
        { 'x-oss-forbid-overwrite': 'true' },
      ],
      imagegate: { token: owner, capacity_bytes: capacity.bytes, capacity_files: capacity.files },
    };
    const policy = Buffer.from(JSON.stringify(document)).toString('base64');
    return {
      policy,
      signature: this.sign(`policy\n${policy}`),
      uploadDir,
      expiresInSeconds: CERTIFICATE_VALIDITY_SECONDS,
    };
  }

  /** Checks a posted policy and its signature; answers the certificate it stands for. */
  checkPolicy(policy: string, signature: string): PolicyCheck {
    const expected = Buffer.from(this.sign(`policy\n${policy}`));
    const given = Buffer.from(signature);
    if (!SIGNATURE_PATTERN.test(signature) || !timingSafeEqual(given, expected))
      return {
        ok: false,
        reason: 'bad-signature',
        message: 'Signature does not match policy; the certificate was altered or not issued here',
      };
    let document: unknown;
    try {
      document = JSON.parse(Buffer.from(policy, 'base64').toString('utf8'));
    } catch {
      document = undefined;
    }
    const uploadDir = isPolicyDocument(document) ? uploadDirOf(document.conditions) : undefined;
    if (!isPolicyDocument(document) || uploadDir === undefined)
      return { ok: false, reason: 'malformed', message: 'policy is not one this gateway issues' };
    const expiresAt = Date.parse(document.expiration);
    if (!Number.isFinite(expiresAt) || expiresAt <= this.now())
      return {
        ok: false,
        reason: 'expired',
        message: `the upload certificate expired at ${document.expiration}; ask for a new one`,
      };
    const { token, capacity_bytes: bytes, capacity_files: files } = document.imagegate;
    return { ok: true, uploadDir, owner: token, capacity: { bytes, files }, expiresAt };
  }

  /**
   * Reads `key` as `<upload_dir>/<file name>`; with `owner`, also checks that this token's
   * certificate made the directory. Expiry is not checked here: the caller decides what it means.
   */
  readKey(key: string, owner?: string): UploadKeyCheck {
    const slash = key.lastIndexOf('/');
    const uploadDir = key.slice(0, Math.max(slash, 0));
    const fileName = key.slice(slash + 1);
    const match = UPLOAD_DIR_PATTERN.exec(uploadDir);
    if (slash < 0 || match === null)
      return { ok: false, problem: 'is not the key of an upload made through this gateway' };
    if (fileName === '' || Buffer.byteLength(fileName) > MAX_FILE_NAME_BYTES)
      return {
        ok: false,
        problem: `the file name after the upload directory must be 1 to ${MAX_FILE_NAME_BYTES} bytes`,
      };
    if (CONTROL_CHARACTERS.test(fileName))
      return { ok: false, problem: 'the file name contains control characters' };
    const [, keepUntilText, nonce, tag] = match;
    if (keepUntilText === undefined || nonce === undefined || tag === undefined)
      return { ok: false, problem: 'is not the key of an upload made through this gateway' };
    const keepUntil = Number(keepUntilText);
    if (owner !== undefined) {
      const expected = Buffer.from(this.ownerTag(owner, keepUntil, nonce));
      if (!timingSafeEqual(expected, Buffer.from(tag)))
        return { ok: false, problem: 'no upload of this token has this key' };
    }
    const objectName = createHash('sha256').update(key).digest('base64url');
    return { ok: true, upload: { key, uploadDir, keepUntil, objectName } };
  }

  nowSeconds(): number {
    return Math.floor(this.now() / 1000);
  }

  private ownerTag(owner: string, keepUntil: number, nonce: string): string {
    return createHmac('sha256', this.signingKey)
      .update(`upload-dir\n${owner}\n${keepUntil}\n${nonce}`)
      .digest()
      .subarray(0, TAG_BYTES)
      .toString('hex');
  }

  private sign(message: string): string {
    return createHmac('sha256', this.signingKey).update(message).digest('base64url');
  }
}
