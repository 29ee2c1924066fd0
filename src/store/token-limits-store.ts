import type { Kysely, Updateable } from 'kysely';
import {
  decodeModels,
  encodeModels,
  type QuotaStanding,
  type TokenLimitChanges,
  type TokenLimits,
} from '../domain/token-limits.js';
import type { DatabaseSchema } from './database/schema.js';

export interface TokenLimitsRecord extends TokenLimits, QuotaStanding {
  tokenId: string;
}

/** Reads and changes the limits kept in the token rows, on SQLite or PostgreSQL alike. */
export class SqlTokenLimitsStore {
  constructor(private readonly db: Kysely<DatabaseSchema>) {}

  async find(tokenId: string): Promise<TokenLimitsRecord | undefined> {
    const row = await this.selectLimits().where('id', '=', tokenId).executeTakeFirst();
    return row === undefined ? undefined : fromRow(row);
  }

  async list(): Promise<TokenLimitsRecord[]> {
    return (await this.selectLimits().execute()).map(fromRow);
  }

  async findMany(tokenIds: readonly string[]): Promise<TokenLimitsRecord[]> {
    if (tokenIds.length === 0) return [];
    return (await this.selectLimits().where('id', 'in', tokenIds).execute()).map(fromRow);
  }

  /** Applies the changes; false when there is no such token. */
  async update(tokenId: string, changes: TokenLimitChanges): Promise<boolean> {
    const set: Updateable<DatabaseSchema['tokens']> = {};
    if (changes.imageQuota !== undefined) set.image_quota = changes.imageQuota;
    if (changes.requestsPerMinute !== undefined)
      set.requests_per_minute = changes.requestsPerMinute;
    if (changes.maxConcurrent !== undefined) set.max_concurrent = changes.maxConcurrent;
    if (changes.allowedModels !== undefined)
      set.allowed_models = encodeModels(changes.allowedModels);
    if (changes.maxPendingTasks !== undefined) set.max_pending_tasks = changes.maxPendingTasks;
    if (changes.uploadMbPerWindow !== undefined)
      set.upload_mb_per_window = changes.uploadMbPerWindow;
    if (changes.uploadFilesPerWindow !== undefined)
      set.upload_files_per_window = changes.uploadFilesPerWindow;
    if (changes.expiresAt !== undefined) set.expires_at = changes.expiresAt;
    if (Object.keys(set).length === 0) return (await this.find(tokenId)) !== undefined;
    const result = await this.db
      .updateTable('tokens')
      .set(set)
      .where('id', '=', tokenId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  private selectLimits() {
    return this.db
      .selectFrom('tokens')
      .select([
        'id',
        'image_quota',
        'images_used',
        'images_reserved',
        'requests_per_minute',
        'max_concurrent',
        'allowed_models',
        'max_pending_tasks',
        'upload_mb_per_window',
        'upload_files_per_window',
      ]);
  }
}

function fromRow(row: {
  id: string;
  image_quota: number | null;
  images_used: number;
  images_reserved: number;
  requests_per_minute: number | null;
  max_concurrent: number | null;
  allowed_models: string | null;
  max_pending_tasks: number | null;
  upload_mb_per_window: number | null;
  upload_files_per_window: number | null;
}): TokenLimitsRecord {
  return {
    tokenId: row.id,
    imageQuota: row.image_quota === null ? undefined : Number(row.image_quota),
    imagesUsed: Number(row.images_used),
    imagesReserved: Number(row.images_reserved),
    requestsPerMinute: row.requests_per_minute ?? undefined,
    maxConcurrent: row.max_concurrent ?? undefined,
    allowedModels: decodeModels(row.allowed_models),
    maxPendingTasks: row.max_pending_tasks ?? undefined,
    uploadMbPerWindow: row.upload_mb_per_window ?? undefined,
    uploadFilesPerWindow: row.upload_files_per_window ?? undefined,
  };
}
