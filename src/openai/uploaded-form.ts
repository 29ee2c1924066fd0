/** One file part of a multipart body, described without its bytes. */
export interface UploadedFileInfo {
  /** The form field it came in, `image` or `image[]` as the SDKs send them. */
  field: string;
  /** What error messages call it: `image`, or `image[1]` for the second of an array. */
  name: string;
  filename: string;
  contentType: string;
  size: number;
  /** SHA-256 of the bytes, hex; computed only when the request carries an Idempotency-Key. */
  sha256: string | undefined;
}

/**
 * A parsed multipart body: its text fields and the descriptions of its files, in the order they
 * came. This is what the route sees as its body, so an Idempotency-Key fingerprint covers every
 * field and, through the digests, every file; the bytes are kept privately beside it.
 */
export class UploadedForm {
  readonly fields: { name: string; value: string }[] = [];
  readonly files: UploadedFileInfo[] = [];
  readonly #bytes: Buffer[] = [];

  addField(name: string, value: string): void {
    this.fields.push({ name, value });
  }

  addFile(info: UploadedFileInfo, bytes: Buffer): void {
    this.files.push(info);
    this.#bytes.push(bytes);
  }

  /** The bytes of the file at `index` of `files`. */
  bytesOf(index: number): Buffer {
    const bytes = this.#bytes[index];
    if (bytes === undefined) throw new RangeError(`no uploaded file ${index}`);
    return bytes;
  }

  /** The last value of a text field, for naming the model in the ledger of a refused request. */
  valueOf(name: string): string | undefined {
    return this.fields.findLast((field) => field.name === name)?.value;
  }
}
