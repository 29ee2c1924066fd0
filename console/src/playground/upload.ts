import { type UploadCertificate, uploadForm } from '../../../src/client/upload-form.js';
import { ApiError, api, authorization, errorOf } from '../api';

/**
 * Sends a local file through the gateway's upload protocol, as the DashScope SDK does
 * (docs/api.md §12): a certificate for `model`, then an OSS PostObject form to its upload host.
 * Returns the `oss://` key the request names the file by.
 */
export async function uploadFile(file: File, model: string): Promise<string> {
  const query = new URLSearchParams({ action: 'getPolicy', model });
  const { data } = await api<{ data: UploadCertificate }>(`/api/v1/uploads?${query.toString()}`);
  const name = safeName(file.name);
  const key = `${data.upload_dir}/${name}`;
  const form = uploadForm(data, key, {
    bytes: file,
    name,
    contentType: file.type || 'application/octet-stream',
  });
  const response = await fetch(data.upload_host, { method: 'POST', body: form });
  if (!response.ok) throw await errorOf(response);
  return `oss://${key}`;
}

/** A pasted image has no name; other names keep their letters, digits, dots and dashes. */
function safeName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]+/g, '_').slice(-120);
  return cleaned === '' || cleaned === '_' ? `image-${Date.now()}.png` : cleaned;
}

/**
 * The image at `url` as the gateway loads it for a generation (POST /console/api/preview, the
 * same fetch and checks), as a blob: URL the page's CSP lets it show, with its pixel size. A
 * refusal throws the gateway's error, which names `image`.
 */
export async function previewOf(
  url: string,
): Promise<{ preview: string; width: number; height: number }> {
  const response = await fetch('/console/api/preview', {
    method: 'POST',
    headers: { ...authorization(), 'content-type': 'application/json' },
    body: JSON.stringify({ image: url }),
  });
  if (!response.ok) throw await errorOf(response);
  return {
    preview: URL.createObjectURL(await response.blob()),
    width: Number(response.headers.get('x-image-width')),
    height: Number(response.headers.get('x-image-height')),
  };
}

/** The pixel size of an image file, read by the browser. */
export async function imageSize(url: string): Promise<{ width: number; height: number }> {
  const image = new Image();
  image.src = url;
  await image.decode();
  return { width: image.naturalWidth, height: image.naturalHeight };
}

/**
 * Uploads `file`; if the gateway refuses it for its alpha channel (a pasted screenshot is a PNG
 * with one), uploads it again as a JPEG drawn on white, which has none. The gateway decides what
 * it accepts: this only answers that one refusal.
 */
export async function uploadWithoutTransparency(
  file: File,
  model: string,
  preview: string,
): Promise<string> {
  try {
    return await uploadFile(file, model);
  } catch (error) {
    if (
      !(error instanceof ApiError) ||
      error.code !== 'InvalidImage' ||
      !/alpha/i.test(error.message)
    )
      throw error;
    return uploadFile(await opaqueJpeg(preview, file.name), model);
  }
}

async function opaqueJpeg(url: string, name: string): Promise<File> {
  const image = new Image();
  image.src = url;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.naturalWidth;
  canvas.height = image.naturalHeight;
  const context = canvas.getContext('2d') as CanvasRenderingContext2D;
  context.fillStyle = '#ffffff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.drawImage(image, 0, 0);
  const blob = await new Promise<Blob | null>((resolve) =>
    canvas.toBlob(resolve, 'image/jpeg', 0.95),
  );
  if (blob === null) throw new Error('the image could not be re-encoded without transparency');
  return new File([blob], `${name.replace(/\.[^.]*$/, '') || 'pasted'}.jpg`, {
    type: 'image/jpeg',
  });
}
