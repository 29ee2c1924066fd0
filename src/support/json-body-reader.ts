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

/** The body is not valid JSON. */
export class InvalidJson extends Error {}

/** The body is valid JSON with a key that would poison a prototype (`__proto__`, `constructor.prototype`). */
export class PrototypeKey extends Error {}

/** Where the reader is in the text: outside strings, in one, or just after a backslash in one. */
type Place = 'outside' | 'string' | 'escape';

/** Where the string being read began: its chunk, the offset after its quote, and that chunk's view. */
interface StringStart {
  chunk: Buffer;
  offset: number;
  /** The index in `text` of the view of `chunk` (pushed when the chunk has been scanned). */
  textIndex: number;
  /** Where that view begins in `chunk`. */
  viewFrom: number;
}

/**
 * The next position of `byte` in a chunk at or after a position, each search starting where the
 * last one ended: scanning a chunk costs one pass, however many strings it holds.
 */
class NextByte {
  private found = -1;

  constructor(
    private readonly chunk: Buffer,
    private readonly byte: number,
  ) {}

  /** The position, or the chunk's length when there is none. */
  from(position: number): number {
    if (this.found < position && this.found !== this.chunk.length) {
      const at = this.chunk.indexOf(this.byte, position);
      this.found = at === -1 ? this.chunk.length : at;
    }
    return this.found;
  }
}

/**
 * Reads a JSON body chunk by chunk and parses it when it ends, so that a body of large images as
 * `data:` URLs is held about once rather than four times (the chunks, their concatenation, the
 * decoded text and the strings JSON.parse copies out of it).
 *
 * The text is kept as one view per chunk. A string of at least `liftBytes` bytes that JSON.parse
 * would take verbatim (ASCII, no escape, no control character: a base64 data URL) is decoded on
 * its own once its closing quote arrives, from the chunks that hold it, and is cut out of the text,
 * where a placeholder stands; only the rest goes to JSON.parse (secure-json-parse, refusing
 * `__proto__` and `constructor.prototype` as Fastify's parser does), and the placeholders are then
 * replaced by the strings. The value equals what JSON.parse of the whole text gives (a long key
 * may come last among its object's keys), and a text that is not valid JSON is refused all the
 * same: setting a verbatim string aside keeps a string token in its place. Scanning is linear in
 * the body and allocates per chunk, not per string, so a body of millions of tiny strings costs
 * about twice what JSON.parse alone does (`npm run bench -- json-body`), never more memory.
 */
export class JsonBodyReader {
  /** Views of the text received, a placeholder where a string was set aside. */
  private readonly text: Buffer[] = [];
  private place: Place = 'outside';
  /** The string being read. */
  private start: StringStart | undefined;
  /** Its bytes in the chunks before the current one. */
  private earlierBytes = 0;
  /** Whether it holds an escape, so JSON.parse must decode it. */
  private escaped = false;
  private readonly lifted: string[] = [];
  private marker: string | undefined;

  constructor(private readonly liftBytes: number) {}

  push(chunk: Buffer): void {
    const quotes = new NextByte(chunk, QUOTE);
    const backslashes = new NextByte(chunk, BACKSLASH);
    /** Where this chunk's view begins: after a string set aside that ended in it. */
    let viewFrom = 0;
    let position = 0;
    while (position < chunk.length) {
      if (this.place === 'outside') {
        const quote = quotes.from(position);
        if (quote === chunk.length) break;
        position = quote + 1;
        this.place = 'string';
        // A short string that ends in this chunk needs no record of its start: most do.
        const end = quotes.from(position);
        if (
          end < chunk.length &&
          end - position < this.liftBytes &&
          backslashes.from(position) > end
        ) {
          position = end + 1;
          this.place = 'outside';
          continue;
        }
        this.start = { chunk, offset: position, textIndex: this.text.length, viewFrom };
        this.earlierBytes = 0;
        this.escaped = false;
      } else if (this.place === 'escape') {
        position += 1;
        this.place = 'string';
      } else {
        const quote = quotes.from(position);
        const backslash = backslashes.from(position);
        if (backslash < quote) {
          this.escaped = true;
          position = backslash + 1;
          this.place = 'escape';
        } else if (quote === chunk.length) {
          break;
        } else {
          this.place = 'outside';
          if (this.setAside(chunk, quote, viewFrom)) viewFrom = quote;
          position = quote + 1;
        }
      }
    }
    if (this.place !== 'outside' && this.start !== undefined)
      this.earlierBytes += chunk.length - (this.start.chunk === chunk ? this.start.offset : 0);
    if (viewFrom < chunk.length) this.text.push(chunk.subarray(viewFrom));
  }

  /** The parsed body; throws InvalidJson when it is not valid JSON. */
  finish(): unknown {
    if (this.place !== 'outside') throw new InvalidJson('unterminated string');
    const text = Buffer.concat(this.text).toString('utf8');
    let value: unknown;
    try {
      value = secureJsonParse.parse(text, undefined, PARSE_OPTIONS);
    } catch (error) {
      // Only a refused body is parsed again, to tell a caller which of the two it sent.
      if (isJson(text)) throw new PrototypeKey('a key that would poison a prototype');
      throw new InvalidJson(error instanceof Error ? error.message : 'not valid JSON');
    }
    return this.marker === undefined ? value : this.restore(value);
  }

  /**
   * The string that ends at `quote` in `chunk`: set aside when it is long and verbatim, its bytes
   * then cut out of the text in favour of a placeholder. True when it was.
   */
  private setAside(chunk: Buffer, quote: number, viewFrom: number): boolean {
    const start = this.start as StringStart;
    this.start = undefined;
    const sameChunk = start.chunk === chunk;
    const length = this.earlierBytes + quote - (sameChunk ? start.offset : 0);
    if (this.escaped || length < this.liftBytes) return false;
    const pieces = sameChunk
      ? [chunk.subarray(start.offset, quote)]
      : [
          start.chunk.subarray(start.offset),
          ...this.text.slice(start.textIndex + 1),
          chunk.subarray(0, quote),
        ];
    if (!pieces.every((piece) => isAscii(piece))) return false;
    const decoded = Buffer.concat(pieces, length).toString('latin1');
    if (CONTROL_CHARACTER.test(decoded)) return false;

    if (sameChunk) {
      this.text.push(chunk.subarray(viewFrom, start.offset));
    } else {
      this.text[start.textIndex] = start.chunk.subarray(start.viewFrom, start.offset);
      this.text.length = start.textIndex + 1;
    }
    this.marker ??= `\u0000lifted:${randomBytes(16).toString('hex')}:`;
    // The quotes around the string stay in the text; JSON.stringify writes the placeholder's
    // control character as an escape.
    this.text.push(Buffer.from(JSON.stringify(this.marker + this.lifted.length).slice(1, -1)));
    this.lifted.push(decoded);
    return true;
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

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
