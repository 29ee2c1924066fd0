// The one multipart reader both doors use (uploads and OpenAI edits): what it keeps, and how each
// way a form can be wrong is refused, with the door's wording, as soon as it shows.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { GatewayError, invalidParameter } from '../../src/errors/gateway-error.js';
import {
  maxMultipartBytes,
  type MultipartRules,
  type MultipartWording,
  readMultipartForm,
} from '../../src/inputs/multipart-form.js';
import { rejectsWith } from './assert-gateway-error.js';

const BOUNDARY = 'a7b3c9d1e5f20486';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

type Part = { name: string; value: string } | { name: string; filename: string; bytes: Buffer };

function formBody(parts: readonly Part[], close = true): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if ('value' in part) {
      chunks.push(
        Buffer.from(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n${part.value}\r\n`,
        ),
      );
    } else {
      chunks.push(
        Buffer.from(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"; filename="${part.filename}"\r\nContent-Type: image/png\r\n\r\n`,
        ),
        part.bytes,
        Buffer.from('\r\n'),
      );
    }
  }
  if (close) chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

/** Each refusal a code of its own, so a test sees which case the reader took. */
const wording: MultipartWording = {
  contentType: () => invalidParameter('Content-Type', 'content type'),
  fieldTooLong: (field, max) => invalidParameter(field, `field longer than ${max}`),
  fileTooLarge: (name, max) => new GatewayError('RequestTooLarge', `${name}: file over ${max}`),
  bodyTooLarge: () => new GatewayError('RequestTooLarge', 'body: body too large'),
  tooManyFiles: (max) => invalidParameter('image', `more than ${max} files`),
  tooManyFields: (max) => invalidParameter('body', `more than ${max} fields`),
  tooManyParts: () => invalidParameter('body', 'too many parts'),
  cutShort: (name) => invalidParameter(name, 'cut short'),
  malformed: () => invalidParameter('body', 'malformed'),
};

const rules: MultipartRules = {
  maxFileBytes: 1000,
  maxFiles: 2,
  maxFieldBytes: 64,
  maxFields: 4,
  wording,
  nameOf: (field, filesBefore) => `${field}#${filesBefore}`,
};

const read = (body: Buffer, extra: Partial<MultipartRules> = {}, type = CONTENT_TYPE) =>
  readMultipartForm(Readable.from([body]), type, Object.assign({}, rules, extra));

describe('the multipart reader', () => {
  it('keeps fields and files in the order they came, each file whole, hashed when asked', async () => {
    const first = Buffer.alloc(1000, 1);
    const second = Buffer.alloc(10, 2);
    const form = await read(
      formBody([
        { name: 'prompt', value: 'a fox' },
        { name: 'image', filename: 'a.png', bytes: first },
        { name: 'n', value: '2' },
        { name: 'image', filename: 'b.png', bytes: second },
      ]),
      { hashFiles: true },
    );
    assert.deepEqual(form.fields, [
      { name: 'prompt', value: 'a fox' },
      { name: 'n', value: '2' },
    ]);
    assert.deepEqual(
      form.files.map((file) => [file.field, file.name, file.filename, file.bytes.length]),
      [
        ['image', 'image#0', 'a.png', 1000],
        ['image', 'image#1', 'b.png', 10],
      ],
    );
    assert.equal(form.files[0]?.sha256, createHash('sha256').update(first).digest('hex'));
    assert.ok(form.files[1]?.bytes.equals(second));
  });

  it('refuses a file one byte over its limit, naming it', async () => {
    await rejectsWith(
      read(formBody([{ name: 'image', filename: 'a.png', bytes: Buffer.alloc(1001) }])),
      'RequestTooLarge',
      'image#0',
      /^file over 1000$/,
    );
  });

  it('refuses too many files, too many fields and a field too long', async () => {
    const file = { name: 'image', filename: 'a.png', bytes: Buffer.alloc(1) };
    await rejectsWith(read(formBody([file, file, file])), 'InvalidParameter', 'image', /2 files/);
    const field = { name: 'f', value: 'x' };
    await rejectsWith(
      read(formBody([field, field, field, field, field])),
      'InvalidParameter',
      'body',
      /more than 4 fields/,
    );
    await rejectsWith(
      read(formBody([{ name: 'prompt', value: 'x'.repeat(65) }])),
      'InvalidParameter',
      'prompt',
      /longer than 64/,
    );
  });

  it('lets beforeFile refuse the form from the fields before the file, keeping none of its bytes', async () => {
    const seen: string[] = [];
    await rejectsWith(
      read(
        formBody([
          { name: 'policy', value: 'bogus' },
          { name: 'file', filename: 'a.png', bytes: Buffer.alloc(500) },
        ]),
        {
          beforeFile: (part, fields) => {
            seen.push(`${part.field}:${fields.get('policy')}`);
            throw invalidParameter('policy', 'refused');
          },
        },
      ),
      'InvalidParameter',
      'policy',
      /^refused$/,
    );
    assert.deepEqual(seen, ['file:bogus']);
  });

  it('refuses a body that ends inside a file part, a malformed body and a wrong content type', async () => {
    const whole = formBody([{ name: 'image', filename: 'a.png', bytes: Buffer.alloc(800) }], false);
    const body = new PassThrough();
    const reading = readMultipartForm(body, CONTENT_TYPE, rules);
    body.write(whole.subarray(0, 400));
    body.destroy(new Error('aborted'));
    const error = await reading.then(
      () => assert.fail('a cut body was accepted'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof GatewayError);
    assert.equal(error.code, 'InvalidParameter');

    await rejectsWith(
      read(Buffer.from(`--${BOUNDARY}\r\nno headers here`)),
      'InvalidParameter',
      'body',
      /^malformed$/,
    );
    await rejectsWith(
      read(formBody([]), {}, 'multipart/form-data'),
      'InvalidParameter',
      'Content-Type',
      /content type/,
    );
  });

  it('cuts off a body longer than its files and fields can take', async () => {
    const max = maxMultipartBytes(rules);
    const body = new PassThrough();
    const reading = readMultipartForm(body, CONTENT_TYPE, rules);
    body.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"\r\n\r\n`);
    body.write(Buffer.alloc(max + 1));
    await rejectsWith(reading, 'RequestTooLarge', 'body', /^body too large$/);
  });
});
