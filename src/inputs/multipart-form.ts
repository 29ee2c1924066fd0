import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream, type BusboyInstance } from '@fastify/busboy';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import { ByteLimit } from '../support/read-limited.js';
import { discard } from '../support/stream-errors.js';

/** A file part as its head describes it, before any of its bytes are read. */
export interface MultipartFilePart {
  /** The form field it came in. */
  field: string;
  /** What error messages call it (see `MultipartRules.nameOf`). */
  name: string;
  filename: string;
  contentType: string;
}

export interface MultipartFile extends MultipartFilePart {
  bytes: Buffer;
  /** SHA-256 of the bytes, hex; only when the rules ask for it. */
  sha256: string | undefined;
}

/** A whole multipart/form-data body: text fields and files, each in the order they came. */
export interface MultipartForm {
  fields: { name: string; value: string }[];
  files: MultipartFile[];
}

/** The errors a door answers for each way a form can be refused; each names the field it can. */
export interface MultipartWording {
  contentType(): GatewayError;
  fieldTooLong(field: string, maxBytes: number): GatewayError;
  fileTooLarge(name: string, maxBytes: number): GatewayError;
  /** The body as a whole is past `maxMultipartBytes`. */
  bodyTooLarge(): GatewayError;
  tooManyFiles(maxFiles: number): GatewayError;
  tooManyFields(maxFields: number): GatewayError;
  tooManyParts(): GatewayError;
  cutShort(name: string): GatewayError;
  malformed(): GatewayError;
}

export interface MultipartRules {
  /** Per file: one byte more is refused with `fileTooLarge`. */
  maxFileBytes: number;
  maxFiles: number;
  /** Per text field. */
  maxFieldBytes: number;
  maxFields: number;
  wording: MultipartWording;
  /** The name a file part goes by in messages, from its field and the files before it. */
  nameOf?: (field: string, filesBefore: number) => string;
  /**
   * Judges a file part from its head and the fields that came before it, before a byte of it is
   * kept: throwing a GatewayError refuses the form (a policy checked before the file is held).
   */
  beforeFile?: (part: MultipartFilePart, fieldsBefore: ReadonlyMap<string, string>) => void;
  /** Hash each file as it streams in (an Idempotency-Key fingerprints the files). */
  hashFiles?: boolean;
}

/** Room for a field's part headers beside its value. */
const PART_HEAD_BYTES = 1024;

/** The longest whole body the rules allow; a longer one is refused without reading the rest. */
export function maxMultipartBytes(rules: Omit<MultipartRules, 'wording'>): number {
  return (
    rules.maxFiles * (rules.maxFileBytes + PART_HEAD_BYTES) +
    rules.maxFields * (rules.maxFieldBytes + PART_HEAD_BYTES)
  );
}

/**
 * Reads a multipart/form-data body under `rules`: every file is held once, in memory, up to its
 * limit only; a form is refused as soon as what is wrong shows (a file or field too large, too
 * many parts, a policy `beforeFile` refuses, a body cut short or malformed), and the rest of the
 * body is left unread (the error answer's lingering close deals with it). Rejects with the
 * door's GatewayError for each case.
 */
export function readMultipartForm(
  body: Readable,
  contentType: string,
  rules: MultipartRules,
): Promise<MultipartForm> {
  return new Promise((resolve, reject) => {
    let parser: BusboyInstance;
    try {
      parser = Busboy({
        headers: { 'content-type': contentType },
        limits: {
          // One byte over the limit tells a file at the limit from a larger one.
          fileSize: rules.maxFileBytes + 1,
          files: rules.maxFiles,
          fieldSize: rules.maxFieldBytes,
          fields: rules.maxFields,
          parts: rules.maxFiles + rules.maxFields,
        },
      });
    } catch {
      reject(rules.wording.contentType());
      return;
    }
    new FormReading(body, parser, rules, resolve, reject).start();
  });
}

/** One form being read: busboy's events, each turned into a kept part or the form's refusal. */
class FormReading {
  private readonly limit: ByteLimit;
  private readonly fieldsSoFar = new Map<string, string>();
  private readonly fields: MultipartForm['fields'] = [];
  private readonly reads: Promise<MultipartFile>[] = [];
  private failed = false;

  constructor(
    private readonly body: Readable,
    private readonly parser: BusboyInstance,
    private readonly rules: MultipartRules,
    private readonly resolve: (form: MultipartForm) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.limit = new ByteLimit(maxMultipartBytes(rules), () => rules.wording.bodyTooLarge());
  }

  start(): void {
    const { parser, rules } = this;
    const { wording } = rules;
    parser.on('field', (name, value, _nameTruncated, valueTruncated) =>
      this.field(name, value, valueTruncated),
    );
    parser.on('file', (field, stream: BusboyFileStream, filename, _encoding, type) =>
      this.file(field, stream, filename, type),
    );
    parser.on('filesLimit', () => this.fail(wording.tooManyFiles(rules.maxFiles)));
    parser.on('fieldsLimit', () => this.fail(wording.tooManyFields(rules.maxFields)));
    parser.on('partsLimit', () => this.fail(wording.tooManyParts()));
    parser.on('error', () => this.fail(wording.malformed()));
    parser.on('finish', () => this.finish());
    const unreadable = (error: unknown) =>
      this.fail(
        error instanceof GatewayError ? error : invalidParameter('body', 'could not be read'),
      );
    this.limit.on('error', unreadable);
    this.body.on('error', unreadable);
    this.body.pipe(this.limit).pipe(parser);
  }

  private field(name: string | undefined, value: string, valueTruncated: boolean): void {
    if (typeof name !== 'string') this.fail(namelessPart());
    else if (valueTruncated)
      this.fail(this.rules.wording.fieldTooLong(name, this.rules.maxFieldBytes));
    else {
      this.fields.push({ name, value });
      this.fieldsSoFar.set(name, value);
    }
  }

  private file(
    field: string | undefined,
    stream: BusboyFileStream,
    filename: string,
    contentType: string,
  ): void {
    if (this.failed || typeof field !== 'string') {
      discard(stream);
      if (typeof field !== 'string') this.fail(namelessPart());
      return;
    }
    const part = {
      field,
      name: this.rules.nameOf?.(field, this.reads.length) ?? field,
      filename,
      contentType,
    };
    try {
      this.rules.beforeFile?.(part, this.fieldsSoFar);
    } catch (error) {
      discard(stream);
      this.fail(error);
      return;
    }
    const reading = readFile(stream, part, this.rules);
    reading.catch((error: unknown) => {
      discard(stream);
      this.fail(error instanceof GatewayError ? error : this.rules.wording.cutShort(part.name));
    });
    this.reads.push(reading);
  }

  private finish(): void {
    Promise.all(this.reads).then(
      (files) => {
        if (!this.failed) this.resolve({ fields: this.fields, files });
      },
      // Each read's failure has already failed the form.
      () => undefined,
    );
  }

  /** Refuses the form once; the rest of the body is left unread. */
  private fail(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.body.unpipe(this.limit);
    this.limit.unpipe(this.parser);
    this.body.pause();
    this.reject(error);
  }
}

async function readFile(
  stream: BusboyFileStream,
  part: MultipartFilePart,
  rules: MultipartRules,
): Promise<MultipartFile> {
  const chunks: Buffer[] = [];
  let received = 0;
  const hash = rules.hashFiles === true ? createHash('sha256') : undefined;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    received += chunk.length;
    hash?.update(chunk);
  }
  if (stream.truncated || received > rules.maxFileBytes)
    throw rules.wording.fileTooLarge(part.name, rules.maxFileBytes);
  const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
  return Object.assign({}, part, { bytes, sha256: hash?.digest('hex') });
}

/** Busboy hands on a part whose Content-Disposition has no `name` with the name undefined. */
function namelessPart(): GatewayError {
  return invalidParameter(
    'body',
    'a part of the multipart body has no name (Content-Disposition: form-data; name="...")',
  );
}
