import { randomUUID } from 'node:crypto';

/** A request body sent in pieces: its exact length in bytes, and its chunks, made as they go. */
export interface StreamedBody {
  readonly byteLength: number;
  chunks(): Iterable<Buffer>;
}

/** The strings of one streamedJson call, which VerbatimJsonString.toJSON stands markers in for. */
interface Collecting {
  readonly verbatim: VerbatimJsonString[];
  marker: string | undefined;
}

/** Set only while streamedJson's JSON.stringify runs; it never yields, so one at a time. */
let collecting: Collecting | undefined;

/**
 * A string value that goes into a JSON text as it is, its parts one after another. The maker
 * vouches that every part is ASCII without `"`, `\` or control characters (base64, a MIME type),
 * so JSON.stringify would copy it unchanged: streamedJson then never builds it whole.
 */
export class VerbatimJsonString {
  constructor(readonly parts: readonly string[]) {}

  /**
   * Inside streamedJson, a marker that the body's chunks replace with the parts; elsewhere the
   * whole string. A toJSON method rather than a replacer: JSON.stringify calls it for these
   * objects only, where a replacer would run for every key of every body.
   */
  toJSON(): string {
    if (collecting === undefined) return this.parts.join('');
    // A fresh random marker per body: no string of the caller's can be mistaken for one.
    collecting.marker ??= `verbatim-${randomUUID()}-`;
    collecting.verbatim.push(this);
    return `${collecting.marker}${collecting.verbatim.length - 1}`;
  }
}

/** Characters per chunk of a verbatim string: each chunk is one 64 KiB Buffer. */
const CHUNK_CHARACTERS = 64 * 1024;

/**
 * Exactly the bytes of JSON.stringify(value), with every VerbatimJsonString in it written as
 * the string of its parts, produced a chunk at a time. The rest of the value is small and is
 * stringified at once; a value without verbatim strings is one Buffer.
 */
export function streamedJson(value: unknown): Buffer | StreamedBody {
  const context: Collecting = { verbatim: [], marker: undefined };
  collecting = context;
  let text: string;
  try {
    text = JSON.stringify(value);
  } finally {
    collecting = undefined;
  }
  const { verbatim, marker } = context;
  if (marker === undefined) return Buffer.from(text, 'utf8');
  // Around each marker's quotes: the JSON text before it, then the verbatim parts.
  const texts: string[] = [];
  let from = 0;
  verbatim.forEach((_string, index) => {
    const at = text.indexOf(`"${marker}${index}"`, from);
    texts.push(text.slice(from, at + 1));
    from = at + marker.length + String(index).length + 1;
  });
  texts.push(text.slice(from));

  const verbatimLength = verbatim.reduce(
    (sum, string) => sum + string.parts.reduce((partSum, part) => partSum + part.length, 0),
    0,
  );
  return {
    byteLength:
      texts.reduce((sum, piece) => sum + Buffer.byteLength(piece, 'utf8'), 0) + verbatimLength,
    *chunks() {
      for (const [index, piece] of texts.entries()) {
        if (piece.length > 0) yield Buffer.from(piece, 'utf8');
        for (const part of verbatim[index]?.parts ?? []) yield* latin1Chunks(part);
      }
    },
  };
}

function* latin1Chunks(part: string): Generator<Buffer> {
  for (let start = 0; start < part.length; start += CHUNK_CHARACTERS)
    yield Buffer.from(part.slice(start, start + CHUNK_CHARACTERS), 'latin1');
}
