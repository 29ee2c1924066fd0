import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import { imageTooLarge } from '../inputs/input-errors.js';
import { discard } from '../support/stream-errors.js';
import { type UploadedFileInfo, UploadedForm } from './uploaded-form.js';

export interface MultipartLimits {
  /** Per file: past it the file is refused as an image too large (docs/api.md §2.6). */
  maxFileBytes: number;
  maxFiles: number;
  /** Per text field. */
  maxFieldBytes: number;
  maxFields: number;
}

/** How many image files came so far decides the name an array member gets in messages. */
function fileName(field: string, imagesSoFar: number): string {
  return field === 'image[]' ? `image[${imagesSoFar}]` : field;
}

/**
 * Reads a multipart/form-data body as the OpenAI SDKs encode it into an UploadedForm, holding each
 * file once and refusing, as soon as it shows, a file over the image size limit, too many files
 * or fields, or a field too long. Files are hashed only when `hashFiles` (an Idempotency-Key).
 */
export function readMultipartForm(
  body: Readable,
  headers: IncomingHttpHeaders,
  limits: MultipartLimits,
  hashFiles: boolean,
): Promise<UploadedForm> {
  return new Promise((resolve, reject) => {
    const contentType = headers['content-type'] ?? '';
    let parser;
    try {
      parser = Busboy({
        headers: Object.assign({}, headers, { 'content-type': contentType }),
        limits: {
          // One byte over the limit tells a file at the limit from a larger one.
          fileSize: limits.maxFileBytes + 1,
          files: limits.maxFiles,
          fieldSize: limits.maxFieldBytes,
          fields: limits.maxFields,
          parts: limits.maxFiles + limits.maxFields,
        },
      });
    } catch {
      reject(invalidParameter('body', 'Content-Type must be multipart/form-data with a boundary'));
      return;
    }
    const form = new UploadedForm();
    let failed = false;
    let imageFiles = 0;
    // Files are read as they stream in and added to the form in the order they came.
    const files: Promise<{ info: UploadedFileInfo; bytes: Buffer }>[] = [];
    const fail = (error: GatewayError) => {
      if (failed) return;
      failed = true;
      body.unpipe(parser);
      body.resume();
      reject(error);
    };
    const readFile = async (
      stream: BusboyFileStream,
      part: Omit<UploadedFileInfo, 'size' | 'sha256'>,
    ) => {
      const chunks: Buffer[] = [];
      const hash = hashFiles ? createHash('sha256') : undefined;
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        chunks.push(chunk);
        hash?.update(chunk);
      }
      if (stream.truncated)
        throw imageTooLarge(
          part.name,
          limits.maxFileBytes,
          `got more than ${limits.maxFileBytes} bytes`,
        );
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      return {
        info: Object.assign({}, part, { size: bytes.length, sha256: hash?.digest('hex') }),
        bytes,
      };
    };
    parser.on('file', (field, stream, filename, _encoding, contentType) => {
      if (failed) {
        discard(stream);
        return;
      }
      if (typeof field !== 'string') {
        discard(stream);
        fail(namelessPart());
        return;
      }
      const name = fileName(field, imageFiles);
      if (field.startsWith('image')) imageFiles++;
      const reading = readFile(stream, { field, name, filename, contentType });
      reading.catch((error: unknown) => {
        discard(stream);
        fail(
          error instanceof GatewayError
            ? error
            : invalidParameter(name, 'is cut short: the body ends inside this file part'),
        );
      });
      files.push(reading);
    });
    parser.on('field', (name, value, _nameTruncated, valueTruncated) => {
      if (typeof name !== 'string') fail(namelessPart());
      else if (valueTruncated)
        fail(invalidParameter(name, `is longer than ${limits.maxFieldBytes} bytes`));
      else form.addField(name, value);
    });
    parser.on('filesLimit', () =>
      fail(invalidParameter('image', `at most ${limits.maxFiles} files are accepted`)),
    );
    parser.on('fieldsLimit', () =>
      fail(invalidParameter('body', `at most ${limits.maxFields} form fields are accepted`)),
    );
    parser.on('partsLimit', () => fail(invalidParameter('body', 'the form has too many parts')));
    parser.on('error', () =>
      fail(invalidParameter('body', 'is not a well-formed multipart/form-data body')),
    );
    parser.on('finish', () => {
      Promise.all(files).then(
        (read) => {
          if (failed) return;
          for (const { info, bytes } of read) form.addFile(info, bytes);
          resolve(form);
        },
        () => undefined,
      );
    });
    body.on('error', (error: unknown) =>
      fail(
        error instanceof GatewayError
          ? error
          : new GatewayError('InvalidParameter', 'body: could not be read'),
      ),
    );
    body.pipe(parser);
  });
}

/** Busboy hands on a part whose Content-Disposition has no `name` with the name undefined. */
function namelessPart(): GatewayError {
  return invalidParameter(
    'body',
    'a part of the multipart body has no name (Content-Disposition: form-data; name="...")',
  );
}
