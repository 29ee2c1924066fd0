import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * An upstream API key. The value sits in a private field and every way of printing the object
 * (String(), JSON, util.inspect, pino) shows `[redacted]`, so a key cannot reach a log line, an
 * error message or an admin response by accident; `reveal()` is the one way to read it.
 */
export class ApiKey {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  /** Whether two keys hold the same value, without revealing either. */
  sameAs(other: ApiKey | undefined): boolean {
    return other !== undefined && other.#value === this.#value;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return `ApiKey(${REDACTED})`;
  }
}

/** Looks like an API key in an upstream's message: `sk-...`, also partly masked (`sk-ab***yz`). */
const KEY_LIKE = /\b(?:sk|ak|key)-[A-Za-z0-9*_-]{4,}/g;

/**
 * Removes the channel's key and anything shaped like a key from upstream text before it goes into
 * an error message or a log line. Some upstreams echo a masked key in their 401 messages.
 */
export function redactKeys(text: string, key: ApiKey | undefined): string {
  const value = key?.reveal();
  const withoutKey = value === undefined || value === '' ? text : text.split(value).join(REDACTED);
  return withoutKey.replace(KEY_LIKE, REDACTED);
}
