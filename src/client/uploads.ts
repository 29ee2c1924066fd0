import { openAsBlob } from 'node:fs';
import path from 'node:path';
import type { GatewayClient } from './gateway-client.js';
import { type UploadCertificate, uploadForm } from './upload-form.js';

const CONTENT_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.bmp': 'image/bmp',
  '.webp': 'image/webp',
};

/**
 * Uploads local files as the DashScope SDK's OssUtils does: one certificate for the files of a
 * request, then one PostObject form per file, fields in the SDK's order and the file last.
 * Answers each file's `oss://<key>`, in order; the request that names them must carry
 * `X-DashScope-OssResourceResolve: enable`.
 */
export async function uploadFiles(
  client: GatewayClient,
  model: string,
  files: readonly string[],
  signal?: AbortSignal,
): Promise<string[]> {
  if (files.length === 0) return [];
  const query = new URLSearchParams({ action: 'getPolicy', model });
  const { body } = await client.json<{ data?: UploadCertificate; output?: UploadCertificate }>(
    `${client.paths.uploads}?${query.toString()}`,
    { signal },
  );
  const certificate = body.output ?? body.data;
  if (certificate === undefined) throw new Error('the upload certificate answer holds no data');
  const keys: string[] = [];
  const used = new Set<string>();
  for (const [index, file] of files.entries()) {
    // Keys are never overwritten: two files of one name get distinct ones.
    let name = path.basename(file);
    if (used.has(name)) name = `${index + 1}-${name}`;
    used.add(name);
    const key = `${certificate.upload_dir}/${name}`;
    await client.call(certificate.upload_host, {
      method: 'POST',
      body: await formOf(certificate, key, file),
      headers: { Accept: 'application/json' },
      anonymous: true,
      signal,
    });
    keys.push(`oss://${key}`);
  }
  return keys;
}

async function formOf(certificate: UploadCertificate, key: string, file: string) {
  return uploadForm(certificate, key, {
    bytes: await openAsBlob(file),
    name: path.basename(file),
    contentType: CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
  });
}
