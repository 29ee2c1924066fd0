import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../errors/gateway-error.js';
import type { BlobStore } from '../../storage/blob-store.js';
import { objectKeyOf } from '../../storage/object-keys.js';
import type { ImageUrlSigner } from '../../storage/signed-url.js';
import { sendError } from '../error-reply.js';

export interface ImageRouteOptions {
  blobs: BlobStore;
  urls: ImageUrlSigner;
}

interface ImageRequest {
  Params: { file: string };
  Querystring: Record<string, unknown>;
}

const IMAGE_PATH = '/images/:file';
const OTHER_METHODS = ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/** Every refusal is a 404: whether an image exists is nobody's business without a valid URL. */
function notFound(message: string): GatewayError {
  return new GatewayError('NotFound', message, { 'cache-control': 'no-store' });
}

function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === etag || tag === '*');
}

/**
 * `GET` and `HEAD /images/<id>.png?expires=...&signature=...`: the signature is the credential,
 * so no token is needed. Bytes are streamed from the blob store, never buffered.
 */
export function registerImageRoutes(app: FastifyInstance, options: ImageRouteOptions): void {
  const serve = async (
    request: FastifyRequest<ImageRequest>,
    reply: FastifyReply,
    withBody: boolean,
  ): Promise<FastifyReply> => {
    const checked = options.urls.check(
      request.params.file,
      request.query.expires,
      request.query.signature,
    );
    if (!checked.ok) return sendError(reply, notFound(checked.message));
    const { image, secondsLeft } = checked;
    // The id names one immutable image, so it serves as its entity tag.
    const etag = `"${image.id}"`;
    reply
      .header('cache-control', `private, max-age=${secondsLeft}, immutable`)
      .header('etag', etag);
    if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();

    const key = objectKeyOf(image.id, image.expiresAt);
    const blob = withBody ? await options.blobs.get(key) : await options.blobs.head(key);
    if (blob === undefined) {
      reply.removeHeader('etag');
      return sendError(reply, notFound('image no longer exists'));
    }
    reply
      .type('image/png')
      .header('content-length', blob.size)
      .header('x-content-type-options', 'nosniff');
    return reply.send('stream' in blob ? blob.stream : undefined);
  };

  app.route<ImageRequest>({
    method: 'GET',
    url: IMAGE_PATH,
    // HEAD has its own handler, which asks the store for the size only.
    exposeHeadRoute: false,
    handler: (request, reply) => serve(request, reply, true),
  });
  app.route<ImageRequest>({
    method: 'HEAD',
    url: IMAGE_PATH,
    handler: (request, reply) => serve(request, reply, false),
  });
  app.route({
    method: [...OTHER_METHODS],
    url: IMAGE_PATH,
    handler: async (_request, reply) => {
      reply.header('allow', 'GET, HEAD');
      throw new GatewayError('MethodNotAllowed', 'images accept GET and HEAD only');
    },
  });
}
