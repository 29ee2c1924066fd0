import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import { ByteLimit } from '../support/read-limited.js';
import { discard } from '../support/stream-errors.js';

/** The OSS PostObject form as the DashScope SDK posts it: text fields, then one `file` part. */
export interface UploadForm<Checked> {
  /** What `beforeFile` made of the fields. */
  checked: Checked;
  file: Buffer;
}

export interface UploadFormLimits {
  /** Largest file part, in bytes. */
  maxFileBytes: number;
}

/** Room for the text fields and part headers around the file, which are small. */
const MAX_FIELD_BYTES = 16 * 1024;
const MAX_FIELDS = 32;
const FORM_OVERHEAD_BYTES = MAX_FIELDS * (MAX_FIELD_BYTES + 1024);
const FILE_FIELD = 'file';

/** The largest whole form body; a longer one is refused without reading it. */
export function maxFormBytes(limits: UploadFormLimits): number {
  return limits.maxFileBytes + FORM_OVERHEAD_BYTES;
}

function tooLarge(limits: UploadFormLimits): GatewayError {
  return new GatewayError(
    'RequestTooLarge',
    `file: is larger than ${limits.maxFileBytes / (1024 * 1024)} MB (${limits.maxFileBytes} bytes)`,
  );
}

/**
 * Reads a multipart/form-data upload. The fields come first (as OSS requires and `requests` sends
 * them), so `beforeFile` checks them, policy and signature included, before a byte of the file is
 * kept; a refused form's file is never held. The file is held in memory up to the limit only (the
 * image checks need its bytes), and the whole body is cut off past the limit plus the fields'
 * room. Rejects with a GatewayError naming the field.
 */
export function readUploadForm<Checked>(
  payload: Readable,
  contentType: string,
  limits: UploadFormLimits,
  beforeFile: (fields: ReadonlyMap<string, string>) => Checked,
): Promise<UploadForm<Checked>> {
  return new Promise((resolve, reject) => {
    const fields = new Map<string, string>();
    let settled = false;
    let form: UploadForm<Checked> | undefined;
    let parser;
    try {
      parser = Busboy({
        headers: { 'content-type': contentType },
        limits: {
          fieldSize: MAX_FIELD_BYTES,
          fields: MAX_FIELDS,
          files: 1,
          parts: MAX_FIELDS + 1,
          fileSize: limits.maxFileBytes,
        },
      });
    } catch {
      reject(
        invalidParameter('Content-Type', 'must be multipart/form-data with a boundary parameter'),
      );
      return;
    }
    const limit = new ByteLimit(maxFormBytes(limits), () => tooLarge(limits));
    const fail = (error: GatewayError) => {
      if (settled) return;
      settled = true;
      payload.unpipe(limit);
      limit.unpipe(parser);
      // The rest of the body is not read: the error answer closes the connection.
      payload.pause();
      reject(error);
    };

    parser.on('field', (name, value, _nameTruncated, valueTruncated) => {
      if (valueTruncated) fail(invalidParameter(name, `is longer than ${MAX_FIELD_BYTES} bytes`));
      // OSS ignores fields after the file; so do we.
      else if (form === undefined) fields.set(name, value);
    });
    parser.on('file', (name, stream: BusboyFileStream) => {
      if (settled || form !== undefined) {
        discard(stream);
        return;
      }
      if (name !== FILE_FIELD) {
        discard(stream);
        fail(invalidParameter(name, `the file part must be named "${FILE_FIELD}"`));
        return;
      }
      let checked: Checked;
      try {
        checked = beforeFile(fields);
      } catch (error) {
        discard(stream);
        if (error instanceof GatewayError) fail(error);
        else {
          settled = true;
          reject(error);
        }
        return;
      }
      const chunks: Buffer[] = [];
      let received = 0;
      stream.on('error', () =>
        fail(invalidParameter(FILE_FIELD, 'is cut short: the body ends inside the file part')),
      );
      stream.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        received += chunk.length;
      });
      stream.on('end', () => {
        if (stream.truncated) fail(tooLarge(limits));
        else form = { checked, file: Buffer.concat(chunks, received) };
      });
    });
    const tooManyParts = () =>
      fail(invalidParameter('body', `has more than ${MAX_FIELDS} fields or more than one file`));
    parser.on('partsLimit', tooManyParts);
    parser.on('fieldsLimit', tooManyParts);
    parser.on('filesLimit', tooManyParts);
    parser.on('error', () =>
      fail(invalidParameter('body', 'is not a well-formed multipart/form-data form')),
    );
    parser.on('finish', () => {
      if (settled) return;
      if (form === undefined) {
        fail(invalidParameter(FILE_FIELD, 'is required: the form has no file part'));
        return;
      }
      settled = true;
      resolve(form);
    });
    limit.on('error', (error: unknown) => {
      if (error instanceof GatewayError) fail(error);
      else fail(invalidParameter('body', 'could not be read'));
    });
    payload.on('error', () => fail(invalidParameter('body', 'could not be read')));
    payload.pipe(limit).pipe(parser);
  });
}
