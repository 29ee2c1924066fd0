import type { TokenIssuer } from '../auth/token-issuer.js';
import type { TokenLimitChanges } from '../domain/token-limits.js';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import { echo } from '../errors/echo.js';
import type { SqlTokenLimitsStore } from '../store/token-limits-store.js';
import type { TokenStore } from '../store/token-store.js';
import { type ChangeHistory, type ChangeRecorder, changeView } from './admin-change-log.js';
import type { AdminChange } from '../domain/admin-change.js';
import { checkLimitChanges, COUNT_RULES } from './limit-rules.js';
import { externalView, tokenView, type TokenView } from './token-view.js';
import type { Principal } from '../domain/principal.js';
import { decodeCursor, encodeCursor } from './token-cursor.js';

export interface CreateToken {
  name: string;
  /** Absent: `default`. */
  account?: string | undefined;
  admin: boolean;
  /** Seconds from now, or a time (ms since the epoch) that must be in the future. */
  expiresInSeconds?: number | undefined;
  expiresAt?: number | undefined;
  limits: TokenLimitChanges;
}

/** A change to a token: each field present is set; `limits.expiresAt` null: never expires. */
export interface UpdateToken {
  name?: string | undefined;
  limits: TokenLimitChanges;
}

export interface TokenListQuery {
  account?: string | undefined;
  name?: string | undefined;
  revoked?: boolean | undefined;
  limit: number;
  cursor?: string | undefined;
}

export interface TokenAdminParts {
  issuer: TokenIssuer;
  tokens: TokenStore;
  limits: SqlTokenLimitsStore;
  changes: ChangeRecorder;
  history: ChangeHistory;
  now: () => number;
  /** Drops what this process remembers of a token (its row, its limits) once it changed. */
  forget?: (tokenId: string) => void;
}

/** No token matches. */
export function noSuchToken(id: string): GatewayError {
  return new GatewayError('NotFound', `no token with id ${echo(id)}`);
}

/**
 * What an admin does to gateway tokens, for the CLI and the admin API alike: each operation checks
 * its input (typed GatewayErrors naming the API field), applies it and records the change.
 */
export class TokenAdmin {
  constructor(private readonly parts: TokenAdminParts) {}

  async create(actor: string, request: CreateToken): Promise<{ token: string; view: TokenView }> {
    checkLimitChanges(request.limits);
    const expiresInSeconds = this.secondsUntil(request);
    const { token, record } = await this.parts.issuer.issue({
      name: request.name,
      account: request.account ?? 'default',
      expiresInSeconds,
      admin: request.admin,
    });
    // The token is handed out only once its limits are stored: never a token without its limits.
    await this.parts.limits.update(record.id, request.limits);
    await this.record(actor, 'create', record.id, [
      'name',
      ...(request.account === undefined ? [] : ['account']),
      ...(request.admin ? ['admin'] : []),
      ...(expiresInSeconds === undefined ? [] : ['expires_at']),
      ...limitFields(request.limits),
    ]);
    return { token, view: await this.get(record.id) };
  }

  async get(id: string): Promise<TokenView> {
    const token = await this.parts.tokens.find(id);
    if (token === undefined) throw noSuchToken(id);
    return tokenView(token, await this.parts.limits.find(id));
  }

  /** The caller's own token; for an external token what is known, with limits from its row if any. */
  async viewOf(caller: Principal): Promise<TokenView> {
    if (caller.issuer === 'gateway' && caller.tokenId !== undefined)
      return this.get(caller.tokenId);
    const limits =
      caller.tokenId === undefined ? undefined : await this.parts.limits.find(caller.tokenId);
    return externalView(caller, limits);
  }

  async list(query: TokenListQuery): Promise<{ tokens: TokenView[]; nextCursor: string | null }> {
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const records = await this.parts.tokens.page({
      account: query.account,
      name: query.name,
      revoked: query.revoked,
      after,
      limit: query.limit + 1,
    });
    const page = records.slice(0, query.limit);
    const limits = new Map(
      (await this.parts.limits.findMany(page.map((token) => token.id))).map((row) => [
        row.tokenId,
        row,
      ]),
    );
    const last = page.at(-1);
    return {
      tokens: page.map((token) => tokenView(token, limits.get(token.id))),
      nextCursor: records.length > query.limit && last !== undefined ? encodeCursor(last) : null,
    };
  }

  async update(actor: string, id: string, change: UpdateToken): Promise<TokenView> {
    checkLimitChanges(change.limits);
    if (change.name !== undefined) {
      if (!(await this.parts.tokens.rename(id, change.name))) throw noSuchToken(id);
    }
    if (!(await this.parts.limits.update(id, change.limits))) throw noSuchToken(id);
    const fields = [...(change.name === undefined ? [] : ['name']), ...limitFields(change.limits)];
    await this.record(actor, 'update', id, fields);
    return this.get(id);
  }

  /** Who changed what, newest first: of one token, or of every token. */
  async changes(tokenId: string | undefined, limit: number) {
    return (await this.parts.history.list(tokenId, limit)).map(changeView);
  }

  /** Revoking twice keeps the first time. */
  async revoke(actor: string, id: string): Promise<TokenView> {
    if (!(await this.parts.tokens.revoke(id, this.parts.now()))) throw noSuchToken(id);
    await this.record(actor, 'revoke', id, ['revoked_at']);
    return this.get(id);
  }

  private secondsUntil(request: CreateToken): number | undefined {
    if (request.expiresAt === undefined) return request.expiresInSeconds;
    const seconds = Math.ceil((request.expiresAt - this.parts.now()) / 1000);
    if (seconds <= 0) throw invalidParameter('expires_at', 'must be in the future');
    return seconds;
  }

  private async record(
    actor: string,
    action: AdminChange['action'],
    tokenId: string,
    fields: string[],
  ): Promise<void> {
    // This node sees the change at once; others within IMAGEGATE_TOKEN_CACHE_MS.
    this.parts.forget?.(tokenId);
    await this.parts.changes.record({ actor, action, tokenId, fields, at: this.parts.now() });
  }
}

/** The API's names of the limits a change sets. */
function limitFields(changes: TokenLimitChanges): string[] {
  const fields = COUNT_RULES.filter((rule) => changes[rule.key] !== undefined).map(
    (rule) => `limits.${rule.field}`,
  );
  if (changes.allowedModels !== undefined) fields.push('limits.models');
  if (changes.expiresAt !== undefined) fields.push('expires_at');
  return fields;
}
