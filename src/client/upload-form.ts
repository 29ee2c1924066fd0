// Platform-free: the CLI (Node.js) and the web console (a browser, console/src/playground) both
// build their upload forms here, with the FormData and Blob both platforms have.

/** The certificate `GET /api/v1/uploads?action=getPolicy` answers under `data` (docs/api.md §12.1). */
export interface UploadCertificate {
  policy: string;
  signature: string;
  upload_dir: string;
  upload_host: string;
  oss_access_key_id: string;
  x_oss_object_acl: string;
  x_oss_forbid_overwrite: string;
}

/**
 * The PostObject form the DashScope SDK's OssUtils posts for one file under `key`: the fields in
 * its order, the file last.
 */
export function uploadForm(
  certificate: UploadCertificate,
  key: string,
  file: { bytes: Blob; name: string; contentType: string },
): FormData {
  const form = new FormData();
  form.append('OSSAccessKeyId', certificate.oss_access_key_id);
  form.append('Signature', certificate.signature);
  form.append('policy', certificate.policy);
  form.append('key', key);
  form.append('x-oss-object-acl', certificate.x_oss_object_acl);
  form.append('x-oss-forbid-overwrite', certificate.x_oss_forbid_overwrite);
  form.append('success_action_status', '200');
  form.append('x-oss-content-type', file.contentType);
  form.append('file', file.bytes, file.name);
  return form;
}
