import { UPLOADS_PATH } from '../domain/api-paths.js';
import type { ModelAliases } from '../domain/model-aliases.js';
import { MODEL_IDS } from '../domain/models.js';
import type { ErrorCode } from '../errors/error-table.js';

/** The document's error answers (its shared Error schema) for these codes, by status. */
export type ErrorResponses = (codes: readonly ErrorCode[]) => Record<string, object>;

const text = { type: 'string' } as const;

/** docs/api.md §12: the certificate (GET) and the OSS PostObject form (POST) of uploads. */
export function uploadPaths(
  routePrefix: string,
  errorResponses: ErrorResponses,
  aliases: ModelAliases,
): object {
  return {
    [`${routePrefix}${UPLOADS_PATH}`]: {
      get: {
        operationId: 'getUploadPolicy',
        summary:
          'An upload certificate, as the DashScope SDK asks for it before sending a local file',
        parameters: [
          { name: 'action', in: 'query', required: true, schema: { const: 'getPolicy' } },
          {
            name: 'model',
            in: 'query',
            required: true,
            schema: { enum: [...MODEL_IDS, ...aliases.keys()] },
          },
        ],
        responses: {
          '200': {
            description: 'The certificate under `data`, as DashScope answers it.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['data', 'request_id'],
                  properties: {
                    request_id: text,
                    data: {
                      type: 'object',
                      properties: {
                        policy: { ...text, description: 'base64 of the OSS policy JSON' },
                        signature: text,
                        upload_dir: {
                          ...text,
                          description: 'every key must start with it and a /',
                        },
                        upload_host: { ...text, description: 'where to POST the form' },
                        expire_in_seconds: { type: 'integer' },
                        max_file_size_mb: { type: 'integer' },
                        capacity_limit_mb: { type: 'integer' },
                        oss_access_key_id: text,
                        x_oss_object_acl: text,
                        x_oss_forbid_overwrite: text,
                      },
                    },
                  },
                },
              },
            },
          },
          ...errorResponses(['InvalidParameter', 'InvalidApiKey']),
        },
      },
      post: {
        operationId: 'upload',
        summary: 'Upload one file with a certificate (the signed policy is the credential)',
        security: [],
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['OSSAccessKeyId', 'Signature', 'policy', 'key', 'file'],
                properties: {
                  OSSAccessKeyId: text,
                  Signature: text,
                  policy: text,
                  key: { ...text, description: '<upload_dir>/<file name>; use it as oss://<key>' },
                  'x-oss-object-acl': text,
                  'x-oss-forbid-overwrite': text,
                  success_action_status: text,
                  'x-oss-content-type': text,
                  file: { type: 'string', contentMediaType: 'application/octet-stream' },
                },
              },
            },
          },
        },
        responses: {
          '200': { description: 'Stored; the body is empty.' },
          ...errorResponses([
            'InvalidParameter',
            'InvalidImage',
            'InvalidApiKey',
            'RequestTooLarge',
            'UnsupportedMediaType',
          ]),
        },
      },
    },
  };
}
