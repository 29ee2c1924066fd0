import { randomBytes } from 'node:crypto';
import { isAscii } from 'node:buffer';
import secureJsonParse from 'secure-json-parse';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** A raw control character is not allowed in a JSON string; such a string is left to JSON.parse. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f]/;
/** What Fastify's default parser refuses too: a body that would poison a prototype. */
const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const;

/** The body is not valid JSON, or would poison a prototype. */
export class InvalidJson extends Error {}

/** Where the reader is in the text: outside strings, in one, or just after a backslash in one. */
type Place = 'outside' | 'string' | 'escape';

/**
 * Reads a JSON body chunk by chunk and parses it when it ends, so that a body of large images as
 * `data:` URLs is held about once rather than four times (the chunks, their concatenation, the
 * decoded text and the strings JSON.parse copies out of it).
 *
 * A string of at least `liftBytes` bytes that JSON.parse would take verbatim (ASCII, no escape,
 * no control character: a base64 data URL) is decoded on its own once its closing quote arrives,
 * from the chunks that hold it, and stands in the text as a placeholder; only the rest of the text goes to
 * JSON.parse (secure-json-parse, refusing `__proto__` and `constructor.prototype` as Fastify's
 * parser does), and the placeholders are then replaced by the strings. The value equals what
 * JSON.parse of the whole text gives (a long key may come last among its object's keys), and a
 * text that is not valid JSON is refused all the same: setting a verbatim string aside keeps a
 * string token in its place.
 */
export class JsonBodyReader {
  /** The text outside set-aside strings, as received (their placeholders are added at the end). */
  private readonly text: Buffer[] = [];
  private place: Place = 'outside';
  /** The string being read: views of the chunks that hold it. */
  private current: Buffer[] = [];
  private currentBytes = 0;
  /** Whether the string being read could be taken verbatim so far. */
  private verbatim = true;
  private readonly lifted: string[] = [];
  private marker: string | undefined;

  constructor(private readonly liftBytes: number) {}

  push(chunk: Buffer): void {
    let position = 0;
    while (position < chunk.length) {
      if (this.place === 'outside') {
        const quote = chunk.indexOf(QUOTE, position);
        const end = quote === -1 ? chunk.length : quote + 1;
        this.text.push(chunk.subarray(position, end));
        position = end;
        if (quote !== -1) this.startString();
      } else if (this.place === 'escape') {
        this.take(chunk.subarray(position, position + 1));
        position += 1;
        this.place = 'string';
      } else {
        const quote = chunk.indexOf(QUOTE, position);
        const backslash = chunk.indexOf(BACKSLASH, position);
        if (backslash !== -1 && (quote === -1 || backslash < quote)) {
          this.verbatim = false;
          this.take(chunk.subarray(position, backslash + 1));
          position = backslash + 1;
          this.place = 'escape';
        } else if (quote === -1) {
          this.take(chunk.subarray(position));
          position = chunk.length;
        } else {
          this.take(chunk.subarray(position, quote));
          position = quote + 1;
          this.endString();
        }
      }
    }
  }

  /** The parsed body; throws InvalidJson when it is not valid JSON. */
  finish(): unknown {
    if (this.place !== 'outside') throw new InvalidJson('unterminated string');
    const text = Buffer.concat(this.text).toString('utf8');
    let value: unknown;
    try {
      value = secureJsonParse.parse(text, undefined, PARSE_OPTIONS);
    } catch (error) {
      throw new InvalidJson(error instanceof Error ? error.message : 'not valid JSON');
    }
    return this.marker === undefined ? value : this.restore(value);
  }

  private startString(): void {
    this.place = 'string';
    this.current = [];
    this.currentBytes = 0;
    this.verbatim = true;
  }

  /** Adds `piece` (a view of the chunk, not a copy) to the string being read. */
  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.verbatim && !isAscii(piece)) this.verbatim = false;
    this.current.push(piece);
    this.currentBytes += piece.length;
  }

  private endString(): void {
    this.place = 'outside';
    const lifted = this.verbatim && this.currentBytes >= this.liftBytes ? this.lift() : undefined;
    if (lifted === undefined) {
      this.text.push(...this.current, QUOTE_BYTES);
    } else {
      this.marker ??= `\u0000lifted:${randomBytes(16).toString('hex')}:`;
      // The opening quote is in the text already; JSON.stringify's gives the closing one.
      this.text.push(Buffer.from(JSON.stringify(this.marker + this.lifted.length).slice(1)));
      this.lifted.push(lifted);
    }
    this.current = [];
  }

  /**
   * The string read, decoded in one step into a string of its own (ASCII: one byte a character),
   * or undefined when it holds a control character, which JSON.parse must refuse.
   */
  private lift(): string | undefined {
    const decoded = Buffer.concat(this.current, this.currentBytes).toString('latin1');
    return CONTROL_CHARACTER.test(decoded) ? undefined : decoded;
  }

  /**
   * Puts each set-aside string back where its placeholder is. The walk keeps its own stack: JSON
   * nested 100,000 levels deep parses, and must not overflow the call stack here either.
   */
  private restore(value: unknown): unknown {
    const marker = this.marker as string;
    const original = (item: unknown): unknown =>
      typeof item === 'string' && item.startsWith(marker)
        ? this.lifted[Number(item.slice(marker.length))]
        : item;
    const pending: object[] = [];
    const visit = (item: unknown) => {
      if (item !== null && typeof item === 'object') pending.push(item);
    };
    visit(value);
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      const record = next as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const item = record[key];
        if (typeof item === 'string') record[key] = original(item);
        else visit(item);
        const name = original(key) as string;
        // A long key: JSON allows one, and nothing reads key order, so it may move to the end.
        if (name !== key) {
          record[name] = record[key];
          delete record[key];
        }
      }
    }
    return original(value);
  }
}

const QUOTE_BYTES = Buffer.from('"');
