import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import { imageTooLarge } from '../inputs/input-errors.js';
import {
  maxMultipartBytes,
  type MultipartWording,
  readMultipartForm,
} from '../inputs/multipart-form.js';
import { UploadedForm } from './uploaded-form.js';

export interface MultipartLimits {
  /** Per file: past it the file is refused as an image too large (docs/api.md §2.6). */
  maxFileBytes: number;
  maxFiles: number;
  /** Per text field. */
  maxFieldBytes: number;
  maxFields: number;
}

/** How many image files came before decides the name an array member gets in messages. */
function fileName(field: string, filesBefore: number): string {
  return field === 'image[]' ? `image[${filesBefore}]` : field;
}

function wordingFor(limits: MultipartLimits): MultipartWording {
  return {
    contentType: () =>
      invalidParameter('body', 'Content-Type must be multipart/form-data with a boundary'),
    fieldTooLong: (field, maxBytes) => invalidParameter(field, `is longer than ${maxBytes} bytes`),
    fileTooLarge: (name, maxBytes) =>
      imageTooLarge(name, maxBytes, `got more than ${maxBytes} bytes`),
    bodyTooLarge: () =>
      new GatewayError(
        'RequestTooLarge',
        `body: is larger than the ${maxMultipartBytes(limits)} bytes ${limits.maxFiles} images and ${limits.maxFields} fields can take`,
      ),
    tooManyFiles: (maxFiles) => invalidParameter('image', `at most ${maxFiles} files are accepted`),
    tooManyFields: (maxFields) =>
      invalidParameter('body', `at most ${maxFields} form fields are accepted`),
    tooManyParts: () => invalidParameter('body', 'the form has too many parts'),
    cutShort: (name) => invalidParameter(name, 'is cut short: the body ends inside this file part'),
    malformed: () => invalidParameter('body', 'is not a well-formed multipart/form-data body'),
  };
}

/**
 * Reads a multipart/form-data body as the OpenAI SDKs encode it into an UploadedForm: each file
 * held once, a file over the image size limit, too many files or fields, or a field too long
 * refused as soon as it shows. Files are hashed only when `hashFiles` (an Idempotency-Key).
 */
export async function readOpenAiForm(
  body: Readable,
  headers: IncomingHttpHeaders,
  limits: MultipartLimits,
  hashFiles: boolean,
): Promise<UploadedForm> {
  const read = await readMultipartForm(
    body,
    headers['content-type'] ?? '',
    Object.assign({}, limits, {
      wording: wordingFor(limits),
      nameOf: fileName,
      hashFiles,
    }),
  );
  const form = new UploadedForm();
  for (const { name, value } of read.fields) form.addField(name, value);
  for (const { bytes, ...info } of read.files)
    form.addFile(Object.assign(info, { size: bytes.length }), bytes);
  return form;
}
