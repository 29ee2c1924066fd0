import { MODEL_B } from '../../src/domain/models.js';
import { randomBytes } from 'node:crypto';
import { type RawAnswer, rawExchange } from './raw-http.js';

/** The certificate as GET .../uploads?action=getPolicy answers it under `data`. */
export interface UploadCertificate {
  policy: string;
  signature: string;
  upload_dir: string;
  upload_host: string;
  expire_in_seconds: number;
  max_file_size_mb: number;
  capacity_limit_mb: number;
  oss_access_key_id: string;
  x_oss_object_acl: string;
  x_oss_forbid_overwrite: string;
}

const SDK_USER_AGENT = 'dashscope/1.25.0; python/3.11.2; platform/Linux; processor/x86_64';

/** `GET {base}/uploads?action=getPolicy&model=M`, headed as the SDK's GetMixin sends it. */
export function getPolicy(
  port: number,
  prefix: string,
  model: string,
  authorization: string | undefined,
): Promise<RawAnswer> {
  const lines = [
    `GET ${prefix}/api/v1/uploads?action=getPolicy&model=${encodeURIComponent(model)} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    `User-Agent: ${SDK_USER_AGENT}`,
    'Accept-Encoding: gzip, deflate',
    'Accept: application/json; charset=utf-8',
    'Connection: keep-alive',
    ...(authorization === undefined ? [] : [`Authorization: ${authorization}`]),
  ];
  return rawExchange(port, `${lines.join('\r\n')}\r\n\r\n`, { waitForCloseMs: 0 });
}

/** The certificate getPolicy answers, for tests whose subject is what comes after it. */
export async function uploadCertificate(
  port: number,
  prefix: string,
  model: string,
  authorization: string,
): Promise<UploadCertificate> {
  const answer = await getPolicy(port, prefix, model, authorization);
  if (answer.status !== 200) throw new Error(`getPolicy answered ${answer.status}: ${answer.body}`);
  return (JSON.parse(answer.body) as { data: UploadCertificate }).data;
}

export interface FormPart {
  name: string;
  value: string | Buffer;
  /** Only the file part has one; `requests` gives it no Content-Type header. */
  filename?: string;
}

/** The form fields OssUtils.upload sends, in its order, for `fileName` under the certificate. */
export function sdkFormFields(
  certificate: UploadCertificate,
  fileName: string,
  contentType = 'image/png',
): FormPart[] {
  return [
    { name: 'OSSAccessKeyId', value: certificate.oss_access_key_id },
    { name: 'Signature', value: certificate.signature },
    { name: 'policy', value: certificate.policy },
    { name: 'key', value: `${certificate.upload_dir}/${fileName}` },
    { name: 'x-oss-object-acl', value: certificate.x_oss_object_acl },
    { name: 'x-oss-forbid-overwrite', value: certificate.x_oss_forbid_overwrite },
    { name: 'success_action_status', value: '200' },
    { name: 'x-oss-content-type', value: contentType },
  ];
}

/**
 * A body as urllib3's encode_multipart_formdata writes it for `requests.post(files=, data=)`: a
 * 32-hex-digit boundary, each part's Content-Disposition (and no Content-Type), CRLF after each
 * part's data, and the closing delimiter.
 */
export function encodeForm(parts: readonly FormPart[]): { contentType: string; body: Buffer } {
  const boundary = randomBytes(16).toString('hex');
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition =
      part.filename === undefined
        ? `form-data; name="${part.name}"`
        : `form-data; name="${part.name}"; filename="${part.filename}"`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n`));
    chunks.push(typeof part.value === 'string' ? Buffer.from(part.value) : part.value);
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(chunks) };
}

/** POSTs a form to the certificate's upload_host as OssUtils.upload does: no Authorization. */
export function postForm(
  uploadHost: string,
  form: { contentType: string; body: Buffer },
): Promise<RawAnswer> {
  const url = new URL(uploadHost);
  const lines = [
    `POST ${url.pathname}${url.search} HTTP/1.1`,
    `Host: ${url.host}`,
    `User-Agent: ${SDK_USER_AGENT}`,
    'Accept-Encoding: gzip, deflate',
    'Accept: application/json',
    'Connection: keep-alive',
    `Date: ${new Date().toUTCString()}`,
    `Content-Length: ${form.body.length}`,
    `Content-Type: ${form.contentType}`,
  ];
  return rawExchange(Number(url.port), `${lines.join('\r\n')}\r\n\r\n`, {
    body: form.body,
    waitForCloseMs: 0,
  });
}

/** The SDK's whole upload of one file: the form fields, then the file part named `file`. */
export function uploadFile(
  certificate: UploadCertificate,
  fileName: string,
  bytes: Buffer,
): Promise<RawAnswer> {
  return postForm(
    certificate.upload_host,
    encodeForm([
      ...sdkFormFields(certificate, fileName),
      { name: 'file', value: bytes, filename: fileName },
    ]),
  );
}

/**
 * A whole upload form for model B under a fresh certificate of the caller's token (each key takes
 * one upload only), as the SDK would post it: `file` is the file part's bytes.
 */
export async function signedUploadForm(
  gateway: { port: number; authorization: string },
  fileName: string,
  file: Buffer,
): Promise<{ contentType: string; body: Buffer }> {
  const certificate = await uploadCertificate(
    gateway.port,
    '/vendor',
    MODEL_B,
    gateway.authorization,
  );
  return encodeForm([
    ...sdkFormFields(certificate, fileName),
    { name: 'file', value: file, filename: 'f.png' },
  ]);
}
