import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UploadAdmission } from '../../admission/admission.js';
import type { Authenticator, TokenStanding } from '../../auth/authenticator.js';
import { uploadPaths } from '../../domain/api-paths.js';
import { type ModelAliases, resolveModel } from '../../domain/model-aliases.js';
import { MODEL_IDS } from '../../domain/models.js';
import { GatewayError, invalidParameter } from '../../errors/gateway-error.js';
import { checkImage } from '../../inputs/check-image.js';
import { bytesInMemory } from '../../inputs/image-bytes.js';
import {
  type CheckedCertificate,
  MAX_UPLOAD_BYTES,
  MAX_UPLOAD_MB,
  UPLOAD_ACCESS_KEY_ID,
  type UploadKey,
  type UploadPolicySigner,
} from '../../storage/upload-policy.js';
import type { UploadStore } from '../../storage/upload-store.js';
import { principalOf } from '../hooks/authentication.js';
import type { PublicOrigins } from '../public-origins.js';
import { maxFormBytes, readUploadForm } from '../upload-form.js';
import { echoQuoted } from '../../errors/echo.js';
import type { LevelGauge } from '../../metrics/level-gauge.js';

export interface UploadRouteOptions {
  routePrefix: string;
  authenticator: Authenticator;
  policies: UploadPolicySigner;
  store: UploadStore;
  /** What `upload_host` names: the public base URL, or the request's Host when allowed. */
  origins: PublicOrigins;
  /** The bounds on certificates and uploads, per certificate and per token. */
  admission: UploadAdmission;
  /** Whether a certificate's token may still upload (revoked, expired). */
  tokens: TokenStanding;
  /** The SDK asks for a certificate with the model name it was given, an alias as often as not. */
  modelAliases: ModelAliases;
  /** Upload forms being read, checked and saved, for GET /metrics; absent: not counted. */
  inFlight?: LevelGauge | undefined;
}

const FORM_LIMITS = { maxFileBytes: MAX_UPLOAD_BYTES };
const MIB = 1024 * 1024;

function queryText(query: unknown, name: string): string | undefined {
  if (typeof query !== 'object' || query === null || !(name in query)) return undefined;
  const value: unknown = Reflect.get(query, name);
  return typeof value === 'string' ? value : undefined;
}

function requiredField(fields: ReadonlyMap<string, string>, name: string): string {
  const value = fields.get(name);
  if (value === undefined || value === '') throw invalidParameter(name, 'is required');
  return value;
}

/** The OSS form checks of docs/api.md §12.2, run before any byte of the file is kept. */
function checkForm(
  fields: ReadonlyMap<string, string>,
  policies: UploadPolicySigner,
): { upload: UploadKey; certificate: CheckedCertificate } {
  if (requiredField(fields, 'OSSAccessKeyId') !== UPLOAD_ACCESS_KEY_ID)
    throw new GatewayError(
      'InvalidApiKey',
      `OSSAccessKeyId: must be the certificate's oss_access_key_id, "${UPLOAD_ACCESS_KEY_ID}"`,
    );
  const policy = requiredField(fields, 'policy');
  const signature = requiredField(fields, 'Signature');
  const key = requiredField(fields, 'key');
  const checked = policies.checkPolicy(policy, signature);
  if (!checked.ok)
    throw new GatewayError(
      'InvalidApiKey',
      `${checked.reason === 'malformed' ? 'policy' : 'Signature'}: ${checked.message}`,
    );
  if (!key.startsWith(`${checked.uploadDir}/`))
    throw invalidParameter(
      'key',
      `must start with the certificate's upload_dir, "${checked.uploadDir}/"`,
    );
  const upload = policies.readKey(key);
  if (!upload.ok) throw invalidParameter('key', upload.problem);
  return { upload: upload.upload, certificate: checked };
}

/** A certificate is good only while the token it was issued to is. */
async function checkCertificateToken(tokens: TokenStanding, owner: string): Promise<void> {
  try {
    await tokens.checkStanding(owner);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    throw new GatewayError(
      'InvalidApiKey',
      `policy: the token this certificate was issued to can no longer upload (${error.message})`,
    );
  }
}

/** Reads, checks, charges and saves one upload form: the part of a POST that holds an upload. */
async function receiveUpload(
  body: Readable,
  contentType: string,
  options: Pick<UploadRouteOptions, 'policies' | 'store' | 'tokens' | 'admission'>,
): Promise<void> {
  const { policies, store } = options;
  const form = await readUploadForm(body, contentType, FORM_LIMITS, (fields) =>
    checkForm(fields, policies),
  );
  const { upload, certificate } = form.checked;
  await checkCertificateToken(options.tokens, certificate.owner);
  checkImage(bytesInMemory(form.file), 'file', MAX_UPLOAD_BYTES);
  const charge = await options.admission.charge(certificate, form.file.length);
  let saved;
  try {
    saved = await store.save(upload, form.file);
  } catch (error) {
    await charge.refund();
    throw error;
  }
  if (saved.kind === 'exists') {
    await charge.refund();
    throw invalidParameter(
      'key',
      'a file was already uploaded under this key, and uploads are never overwritten (x-oss-forbid-overwrite)',
    );
  }
}

/**
 * `GET {prefix}/api/v1/uploads?action=getPolicy&model=M` hands a token an upload certificate, and
 * `POST` on the same path takes the OSS PostObject form the DashScope SDK sends with it. A
 * certificate counts against its token's rate but writes no ledger row; the POST carries no
 * token: its signed policy is the credential, good while its token is, and every file it
 * carries is counted against the certificate's capacity and its token's upload window.
 */
export function registerUploadRoutes(app: FastifyInstance, options: UploadRouteOptions): void {
  void app.register(async (scope) => {
    // The form is read by the handler as a stream; other bodies are refused there, in our shape.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => {
      done(null, payload);
    });
    scope.decorateRequest('principal', undefined);

    for (const path of uploadPaths(options.routePrefix)) {
      scope.get(
        path,
        {
          onRequest: async (request) => {
            request.principal = await options.authenticator.verifyAuthorization(
              request.headers.authorization,
            );
          },
        },
        async (request, reply) => issueCertificate(request, reply, path, options),
      );
      scope.post(path, async (request, reply) => {
        await takeUploadForm(request, options);
        return reply.code(200).send();
      });
    }
  });
}

/** `GET ...?action=getPolicy&model=M`: an upload certificate for the caller's token. */
async function issueCertificate(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  options: UploadRouteOptions,
) {
  const action = queryText(request.query, 'action');
  if (action !== 'getPolicy')
    throw invalidParameter('action', `must be getPolicy, got ${echoQuoted(action ?? null)}`);
  const model = queryText(request.query, 'model');
  const modelId = resolveModel(model, options.modelAliases);
  if (modelId === undefined)
    throw invalidParameter(
      'model',
      `must be one of ${MODEL_IDS.join(', ')} or an alias of one, got ${echoQuoted(model ?? null)}`,
    );
  const owner = principalOf(request).tokenId;
  if (owner === undefined)
    throw new GatewayError(
      'InvalidApiKey',
      'uploads are bound to a token id, and this token has none (an external token needs a jti claim)',
    );
  const { capacity, headers } = await options.admission.certify(owner, modelId);
  const certificate = options.policies.issue(owner, capacity);
  void reply.headers(headers);
  return {
    data: {
      policy: certificate.policy,
      signature: certificate.signature,
      upload_dir: certificate.uploadDir,
      upload_host: `${options.origins.originFor(request.host)}${path}`,
      expire_in_seconds: certificate.expiresInSeconds,
      max_file_size_mb: Math.min(MAX_UPLOAD_MB, capacity.bytes / MIB),
      capacity_limit_mb: capacity.bytes / MIB,
      oss_access_key_id: UPLOAD_ACCESS_KEY_ID,
      x_oss_object_acl: 'private',
      x_oss_forbid_overwrite: 'true',
    },
    request_id: request.id,
  };
}

/** The POST: an OSS PostObject form, refused by its head when it cannot be one, then received. */
async function takeUploadForm(request: FastifyRequest, options: UploadRouteOptions): Promise<void> {
  const contentType = request.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;/i.test(contentType) || !(request.body instanceof Readable))
    throw new GatewayError(
      'UnsupportedMediaType',
      'Content-Type must be multipart/form-data, the OSS PostObject form',
    );
  const declared = Number(request.headers['content-length']);
  if (Number.isSafeInteger(declared) && declared > maxFormBytes(FORM_LIMITS))
    throw new GatewayError(
      'RequestTooLarge',
      `file: is larger than ${MAX_UPLOAD_MB} MB (${MAX_UPLOAD_BYTES} bytes)`,
    );
  options.inFlight?.inc();
  try {
    await receiveUpload(request.body, contentType, options);
  } finally {
    options.inFlight?.dec();
  }
}
