import { invalidParameter } from '../errors/gateway-error.js';

/** Where a page of tokens ends: the last token's creation time and id, opaque to callers. */
export function encodeCursor(token: { createdAt: number; id: string }): string {
  return Buffer.from(JSON.stringify([token.createdAt, token.id])).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: number; id: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      Number.isSafeInteger(value[0]) &&
      typeof value[1] === 'string'
    )
      return { createdAt: value[0] as number, id: value[1] };
  } catch {
    // Not JSON: refused below, as any other cursor this gateway did not hand out.
  }
  throw invalidParameter('cursor', 'is not a cursor this gateway handed out');
}
