import type { FastifyInstance } from 'fastify';
import type { ConsoleCallBounds } from '../../admission/console-call-bounds.js';
import type { Authenticator } from '../../auth/authenticator.js';
import type { ImageFormat } from '../../domain/loaded-image.js';
import type { Principal } from '../../domain/principal.js';
import { CallerGone } from '../../errors/caller-gone.js';
import { invalidParameter } from '../../errors/gateway-error.js';
import type { InputLoader } from '../../inputs/input-loader.js';
import { readImageReference } from '../../validate/image-reference.js';
import { whenClosed } from '../when-closed.js';
import { consoleCaller, verifiedCaller } from './console-caller.js';

export interface PreviewRouteOptions {
  authenticator: Authenticator;
  bounds: ConsoleCallBounds;
  /** The inputs stage a generation loads its images with. */
  inputs: InputLoader;
}

/** An image URL (8,192 characters at most) in a small JSON object; never an inlined image. */
const PREVIEW_BODY_LIMIT = 16 * 1024;

const CONTENT_TYPES: Readonly<Record<ImageFormat, string>> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  bmp: 'image/bmp',
  webp: 'image/webp',
};

function imageOf(body: unknown): string {
  const image =
    typeof body === 'object' && body !== null ? (body as { image?: unknown }).image : undefined;
  if (typeof image !== 'string' || image === '')
    throw invalidParameter('image', 'must be the image URL (or oss:// key) to preview');
  return image;
}

/**
 * POST /console/api/preview `{"image": "<url>"}`: the image a generation would load from that
 * URL, fetched and checked by the same inputs stage (address guard, time-outs, size, format and
 * dimensions; an upload's `oss://` key or one of the gateway's own result URLs read from storage),
 * answered as its bytes. The playground shows it from a `blob:` URL, which its Content-Security-Policy
 * allows where another site's image is not, and draws boxes on it in its own pixels. A refusal is
 * the error a generation would get, naming `image`.
 */
export function registerPreviewRoute(app: FastifyInstance, options: PreviewRouteOptions): void {
  app.post(
    '/console/api/preview',
    {
      bodyLimit: PREVIEW_BODY_LIMIT,
      onRequest: verifiedCaller(options.authenticator),
    },
    async (request, reply) => {
      const caller = consoleCaller(request);
      reply.headers(await options.bounds.count(caller));
      const source = readImageReference(imageOf(request.body), 'image');
      const release = options.bounds.takePreview(caller);
      const callerLeft = new AbortController();
      whenClosed(reply, () => callerLeft.abort(new CallerGone()));
      try {
        const [image] = await options.inputs.load([{ path: 'image', source }], callerLeft.signal, {
          resolve: true,
          owner: (request.principal as Principal).tokenId,
        });
        if (image === undefined) throw new Error('the inputs stage loaded no image');
        return reply
          .header('cache-control', 'no-store')
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', "default-src 'none'; sandbox")
          .header('x-image-width', String(image.width))
          .header('x-image-height', String(image.height))
          .type(CONTENT_TYPES[image.format])
          .send(image.bytes());
      } finally {
        release();
      }
    },
  );
}
