import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../errors/gateway-error.js';
import { echo } from '../../errors/echo.js';

/**
 * Bodies are accepted uncompressed only. Without this check a gzip body would be refused as "not
 * valid JSON", and JSON merely labelled gzip would be accepted; both now get 415, before the body
 * is read.
 */
export function addContentEncodingHooks(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const encoding = request.headers['content-encoding'];
    if (encoding === undefined || encoding.trim().toLowerCase() === 'identity') return done();
    done(
      new GatewayError(
        'UnsupportedMediaType',
        `Content-Encoding: ${echo(encoding)} is not accepted; send the body uncompressed`,
      ),
    );
  });
}
