import type { Readable } from 'node:stream';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import {
  maxMultipartBytes,
  type MultipartRules,
  type MultipartWording,
  readMultipartForm,
} from '../inputs/multipart-form.js';

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

const MAX_FIELD_BYTES = 16 * 1024;
const MAX_FIELDS = 32;
const FILE_FIELD = 'file';

function rulesFor(limits: UploadFormLimits): Omit<MultipartRules, 'wording'> {
  return {
    maxFileBytes: limits.maxFileBytes,
    maxFiles: 1,
    maxFieldBytes: MAX_FIELD_BYTES,
    maxFields: MAX_FIELDS,
  };
}

/** The largest whole form body; a longer one is refused without reading it. */
export function maxFormBytes(limits: UploadFormLimits): number {
  return maxMultipartBytes(rulesFor(limits));
}

function wordingFor(limits: UploadFormLimits): MultipartWording {
  const tooLarge = () =>
    new GatewayError(
      'RequestTooLarge',
      `file: is larger than ${limits.maxFileBytes / (1024 * 1024)} MB (${limits.maxFileBytes} bytes)`,
    );
  const tooManyParts = () =>
    invalidParameter('body', `has more than ${MAX_FIELDS} fields or more than one file`);
  return {
    contentType: () =>
      invalidParameter('Content-Type', 'must be multipart/form-data with a boundary parameter'),
    fieldTooLong: (field, maxBytes) => invalidParameter(field, `is longer than ${maxBytes} bytes`),
    fileTooLarge: tooLarge,
    bodyTooLarge: tooLarge,
    tooManyFiles: tooManyParts,
    tooManyFields: tooManyParts,
    tooManyParts,
    cutShort: (name) => invalidParameter(name, 'is cut short: the body ends inside the file part'),
    malformed: () => invalidParameter('body', 'is not a well-formed multipart/form-data form'),
  };
}

/**
 * Reads an upload form. The fields come first (as OSS requires and `requests` sends them), so
 * `beforeFile` checks them, policy and signature included, before a byte of the file is kept; a
 * refused form's file is never held, and fields after the file are ignored, as OSS ignores them.
 * Rejects with a GatewayError naming the field.
 */
export async function readUploadForm<Checked>(
  payload: Readable,
  contentType: string,
  limits: UploadFormLimits,
  beforeFile: (fields: ReadonlyMap<string, string>) => Checked,
): Promise<UploadForm<Checked>> {
  let checked: { value: Checked } | undefined;
  const form = await readMultipartForm(
    payload,
    contentType,
    Object.assign(rulesFor(limits), {
      wording: wordingFor(limits),
      beforeFile: (part: { field: string }, fields: ReadonlyMap<string, string>) => {
        if (part.field !== FILE_FIELD)
          throw invalidParameter(part.field, `the file part must be named "${FILE_FIELD}"`);
        checked = { value: beforeFile(new Map(fields)) };
      },
    }),
  );
  const file = form.files[0];
  if (file === undefined || checked === undefined)
    throw invalidParameter(FILE_FIELD, 'is required: the form has no file part');
  return { checked: checked.value, file: file.bytes };
}
