import { MODEL_A, type ModelId } from '../domain/models.js';
import { NO_LIMITS, type TokenLimits } from '../domain/token-limits.js';
import { GatewayError } from '../errors/gateway-error.js';
import {
  type CertificateCapacity,
  type CheckedCertificate,
  MAX_UPLOAD_BYTES,
} from '../storage/upload-policy.js';
import type { SqlUploadUsageStore, UploadBound } from '../store/upload-usage-store.js';
import { MODEL_A_MAX_IMAGES } from '../validate/model-a-rules.js';
import { MODEL_B_MAX_IMAGES } from '../validate/model-b-rules.js';
import type { UploadAdmission, UploadCharge } from './admission.js';
import type { LimitsSource } from './limits-source.js';
import type { TokenAdmission } from './token-admission.js';

const MIB = 1024 * 1024;

/** The deployment's upload bounds per token (IMAGEGATE_UPLOAD_*), for tokens without their own. */
export interface UploadBoundSettings {
  windowMs: number;
  mbPerToken: number;
  filesPerToken: number;
}

export interface UploadBoundsOptions {
  /** The token's model and rate, as TokenAdmission.certify checks them. */
  admission: Pick<TokenAdmission, 'certify'>;
  limits: LimitsSource;
  usage: SqlUploadUsageStore;
  settings: UploadBoundSettings;
  now: () => number;
}

/**
 * The bounds on uploads: what one certificate may carry (the inputs of one request of its
 * model, and never more than the token's window), and what one token may store per window of
 * IMAGEGATE_UPLOAD_WINDOW_MS, both counted in the database so that every node shares them.
 */
export class UploadBounds implements UploadAdmission {
  constructor(private readonly options: UploadBoundsOptions) {}

  async certify(
    tokenId: string,
    model: ModelId,
  ): Promise<{ capacity: CertificateCapacity; headers: Record<string, string> }> {
    const { limits, headers } = await this.options.admission.certify(tokenId, model);
    return { capacity: this.capacityFor(limits, model), headers };
  }

  /** What a certificate for `model` may carry, for a token with these limits. */
  private capacityFor(limits: TokenLimits, model: ModelId): CertificateCapacity {
    const window = this.windowOf(limits);
    const files = model === MODEL_A ? MODEL_A_MAX_IMAGES : MODEL_B_MAX_IMAGES;
    return {
      bytes: Math.min(files * MAX_UPLOAD_BYTES, window.maxBytes),
      files: Math.min(files, window.maxFiles),
    };
  }

  /** Both bounds or neither; the certificate's is checked first. */
  async charge(certificate: CheckedCertificate, bytes: number): Promise<UploadCharge> {
    const limits = (await this.options.limits.find(certificate.owner)) ?? NO_LIMITS;
    const window = this.windowOf(limits);
    const now = this.options.now();
    const windowStart =
      Math.floor(now / this.options.settings.windowMs) * this.options.settings.windowMs;
    const token: UploadBound = {
      scope: `token:${certificate.owner}:${windowStart}`,
      maxBytes: window.maxBytes,
      maxFiles: window.maxFiles,
      expiresAt: windowStart + this.options.settings.windowMs,
    };
    const issued: UploadBound = {
      scope: `certificate:${certificate.uploadDir}`,
      maxBytes: certificate.capacity.bytes,
      maxFiles: certificate.capacity.files,
      expiresAt: certificate.expiresAt,
    };
    const full = await this.options.usage.charge([issued, token], bytes);
    if (full === issued)
      throw new GatewayError(
        'Throttling.AllocationQuota',
        `file: this upload certificate carries at most ${describeBound(issued)} (capacity_limit_mb); ask for a new certificate`,
      );
    if (full === token) {
      const retryAfter = Math.max(1, Math.ceil((token.expiresAt - now) / 1000));
      throw new GatewayError(
        'Throttling.RateQuota',
        `file: this token may upload ${describeBound(token)} per ${describeWindow(this.options.settings.windowMs)}, and this file does not fit in what is left; retry after ${retryAfter} s`,
        { 'Retry-After': String(retryAfter) },
      );
    }
    const scopes = [issued.scope, token.scope];
    return { refund: () => this.options.usage.refund(scopes, bytes) };
  }

  private windowOf(limits: TokenLimits): { maxBytes: number; maxFiles: number } {
    const { mbPerToken, filesPerToken } = this.options.settings;
    return {
      maxBytes: (limits.uploadMbPerWindow ?? mbPerToken) * MIB,
      maxFiles: limits.uploadFilesPerWindow ?? filesPerToken,
    };
  }
}

function describeBound(bound: UploadBound): string {
  const files = `${bound.maxFiles} file${bound.maxFiles === 1 ? '' : 's'}`;
  return `${bound.maxBytes / MIB} MiB in ${files}`;
}

function describeWindow(windowMs: number): string {
  const hours = windowMs / 3_600_000;
  if (Number.isInteger(hours)) return hours === 1 ? 'hour' : `${hours} hours`;
  return `${Math.round(windowMs / 1000)} s`;
}
