import { randomBytes } from 'node:crypto';

export type MultipartPart =
  | { name: string; value: string }
  | { name: string; filename: string; contentType: string; data: Buffer };

export function newBoundary(): string {
  return `----imagegate${randomBytes(16).toString('hex')}`;
}

/** A multipart/form-data body (RFC 7578) for `boundary`. */
export function encodeMultipart(parts: readonly MultipartPart[], boundary: string): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition =
      'data' in part
        ? `form-data; name="${quoted(part.name)}"; filename="${quoted(part.filename)}"\r\nContent-Type: ${part.contentType}`
        : `form-data; name="${quoted(part.name)}"`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n`));
    chunks.push('data' in part ? part.data : Buffer.from(part.value, 'utf8'));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

function quoted(text: string): string {
  return text.replace(/["\r\n\\]/g, (character) => encodeURIComponent(character));
}
