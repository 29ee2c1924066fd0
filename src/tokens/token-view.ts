import type { Principal } from '../domain/principal.js';
import type { TokenLimitsRecord } from '../store/token-limits-store.js';
import type { TokenRecord } from '../store/token-store.js';

/** A token as the admin API and `/me` show it; null limits: none, or the deployment's setting. */
export interface TokenView {
  id: string | null;
  name: string | null;
  account: string;
  admin: boolean;
  created_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  limits: {
    image_quota: number | null;
    rpm: number | null;
    concurrency: number | null;
    models: string[] | null;
    pending_tasks: number | null;
    upload_mb: number | null;
    upload_files: number | null;
  };
  images_used: number;
}

function isoOrNull(time: number | undefined): string | null {
  return time === undefined ? null : new Date(time).toISOString();
}

export function limitsView(limits: TokenLimitsRecord | undefined): TokenView['limits'] {
  return {
    image_quota: limits?.imageQuota ?? null,
    rpm: limits?.requestsPerMinute ?? null,
    concurrency: limits?.maxConcurrent ?? null,
    models: limits?.allowedModels === undefined ? null : [...limits.allowedModels],
    pending_tasks: limits?.maxPendingTasks ?? null,
    upload_mb: limits?.uploadMbPerWindow ?? null,
    upload_files: limits?.uploadFilesPerWindow ?? null,
  };
}

export function tokenView(token: TokenRecord, limits: TokenLimitsRecord | undefined): TokenView {
  return {
    id: token.id,
    name: token.name,
    account: token.account,
    admin: token.admin,
    created_at: isoOrNull(token.createdAt),
    expires_at: isoOrNull(token.expiresAt),
    revoked_at: isoOrNull(token.revokedAt),
    limits: limitsView(limits),
    images_used: limits?.imagesUsed ?? 0,
  };
}

/** A token issued elsewhere: no name or times here, limits from its row when it has one. */
export function externalView(caller: Principal, limits: TokenLimitsRecord | undefined): TokenView {
  return {
    id: caller.tokenId ?? null,
    name: null,
    account: caller.account,
    admin: caller.admin,
    created_at: null,
    expires_at: null,
    revoked_at: null,
    limits: limitsView(limits),
    images_used: limits?.imagesUsed ?? 0,
  };
}
