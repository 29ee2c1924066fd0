import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
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
  const { wording } = rules;
  return new Promise((resolve, reject) => {
    let parser;
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
      reject(wording.contentType());
      return;
    }
    const limit = new ByteLimit(maxMultipartBytes(rules), () => wording.bodyTooLarge());
    const fieldsSoFar = new Map<string, string>();
    const form: MultipartForm = { fields: [], files: [] };
    const reads: Promise<MultipartFile>[] = [];
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      body.unpipe(limit);
      limit.unpipe(parser);
      body.pause();
      reject(error);
    };

    parser.on('field', (name, value, _nameTruncated, valueTruncated) => {
      if (typeof name !== 'string') fail(namelessPart());
      else if (valueTruncated) fail(wording.fieldTooLong(name, rules.maxFieldBytes));
      else {
        form.fields.push({ name, value });
        fieldsSoFar.set(name, value);
      }
    });
    parser.on('file', (field, stream: BusboyFileStream, filename, _encoding, type) => {
      if (failed || typeof field !== 'string') {
        discard(stream);
        if (typeof field !== 'string') fail(namelessPart());
        return;
      }
      const part = {
        field,
        name: rules.nameOf?.(field, reads.length) ?? field,
        filename,
        contentType: type,
      };
      try {
        rules.beforeFile?.(part, fieldsSoFar);
      } catch (error) {
        discard(stream);
        fail(error);
        return;
      }
      const reading = readFile(stream, part, rules);
      reading.catch((error: unknown) => {
        discard(stream);
        fail(error instanceof GatewayError ? error : wording.cutShort(part.name));
      });
      reads.push(reading);
    });
    parser.on('filesLimit', () => fail(wording.tooManyFiles(rules.maxFiles)));
    parser.on('fieldsLimit', () => fail(wording.tooManyFields(rules.maxFields)));
    parser.on('partsLimit', () => fail(wording.tooManyParts()));
    parser.on('error', () => fail(wording.malformed()));
    parser.on('finish', () => {
      Promise.all(reads).then(
        (files) => {
          if (failed) return;
          form.files = files;
          resolve(form);
        },
        // Each read's failure has already failed the form.
        () => undefined,
      );
    });
    limit.on('error', (error: unknown) =>
      fail(error instanceof GatewayError ? error : invalidParameter('body', 'could not be read')),
    );
    body.on('error', (error: unknown) =>
      fail(error instanceof GatewayError ? error : invalidParameter('body', 'could not be read')),
    );
    body.pipe(limit).pipe(parser);
  });
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
