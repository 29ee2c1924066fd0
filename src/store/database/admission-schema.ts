import type { Generated } from 'kysely';

/**
 * Per-token limits, columns of `tokens` added by migration 0002. NULL means "no limit".
 * `images_used` counts settled images; `images_reserved` those held by running requests.
 */
export interface TokenLimitColumns {
  image_quota: number | null;
  images_used: Generated<number>;
  images_reserved: Generated<number>;
  requests_per_minute: number | null;
  max_concurrent: number | null;
  /** Comma-separated model ids; NULL allows every model. */
  allowed_models: string | null;
  /** Added by migration 0010; NULL: the deployment's setting applies. */
  max_pending_tasks: number | null;
  upload_mb_per_window: number | null;
  upload_files_per_window: number | null;
}

/**
 * Upload bytes and files counted against a bound (migration 0010): a token's window
 * (`token:<token id>:<window start>`) or a certificate (`certificate:<upload_dir>`). A row is
 * deleted once `expires_at` has passed: its window or certificate can take no more uploads.
 */
export interface UploadUsageTable {
  scope: string;
  bytes: number;
  files: number;
  expires_at: number;
}

/** Images held against a token's quota by a running request, until settled, released or expired. */
export interface QuotaReservationsTable {
  id: string;
  token_id: string;
  images: number;
  created_at: number;
  /** Renewed while the request runs; past it, the reservation is reclaimed. */
  expires_at: number;
  /** JSON of the ledger row written if the reservation is reclaimed: its node died mid-request. */
  ledger_row: string | null;
  /** Images already billed one by one (incremental streams); `images` is what is still held. */
  images_billed: Generated<number>;
}

/** One row per authenticated request. Never a response body or an image. */
export interface UsageLedgerTable {
  id: string;
  request_id: string;
  token_id: string | null;
  account: string;
  model: string | null;
  mode: string | null;
  channel: string | null;
  /** The HTTP status answered. */
  status: number;
  error_code: string | null;
  images_requested: number;
  /** What the upstream said it produced (and charges for); NULL when it says nothing. */
  images_reported: number | null;
  /** Images the gateway received from its engine, extras included. */
  images_received: number;
  /** Images in the answer the caller got. */
  images_delivered: number;
  /** Images counted against the token and priced in `cost_micros`. */
  images_billed: number;
  /** `W*H` of the produced images. */
  output_size: string | null;
  /** Millionths of the configured currency unit. */
  cost_micros: number;
  gateway_ms: number;
  upstream_ms: number | null;
  /** Waiting in the gateway's own queues, part of `gateway_ms`; NULL when none ran or in older rows. */
  queue_ms: number | null;
  /** Storing the images; NULL when none were stored or in older rows. */
  storage_ms: number | null;
  /** 1 when the response was an idempotent replay of an earlier request. */
  replayed: number;
  created_at: number;
  /** The caller's `X-DashScope-WorkSpace`; NULL when it sent none. */
  workspace: string | null;
  /** The protocol the request came in by (`dashscope`, ...); NULL only in rows of older versions. */
  front_door: string | null;
}

/** A caller's Idempotency-Key and, once it finished successfully, the response to replay. */
export interface IdempotencyKeysTable {
  /** The token id, or `account:<account>` for an external token without one. */
  scope: string;
  idempotency_key: string;
  /** SHA-256 of the request body in canonical JSON. */
  fingerprint: string;
  state: 'running' | 'done';
  /** The claim that runs the request; a waiter may take over once `lease_until` has passed. */
  owner: string;
  lease_until: number;
  request_id: string;
  status: number | null;
  response_body: string | null;
  /** JSON object of the response headers worth replaying. */
  response_headers: string | null;
  /** JSON of the generation's result, stored by the settlement that billed it. */
  result: string | null;
  created_at: number;
  expires_at: number;
}
