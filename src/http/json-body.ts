import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import { InvalidJson, JsonBodyReader, PrototypeKey } from '../support/json-body-reader.js';
import { bodyErrors } from './body-errors.js';

/** Strings this long that need no decoding (base64 data URLs) are set aside as they arrive. */
const LIFT_BYTES = 64 * 1024;

type BodyStream = NodeJS.ReadableStream & { receivedEncodedLength?: number };

/**
 * Replaces Fastify's JSON parser in `scope` with one that holds a body of large `data:` URLs
 * about once instead of four times (see JsonBodyReader), with the same limits and answers: the
 * route's body limit (413), a length that does not match Content-Length, an empty body, text that
 * is not JSON or would poison a prototype (400), and the in-flight budget's refusal of a body of
 * undeclared length (503) from the stream it reads.
 */
export function readJsonBodiesOnce(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', (request, payload, done) =>
    readJsonBody(request, payload as BodyStream, done),
  );
}

function readJsonBody(
  request: FastifyRequest,
  payload: BodyStream,
  done: (error: Error | null, body?: unknown) => void,
): void {
  const limit = request.routeOptions.bodyLimit ?? Infinity;
  const declared = Number(request.headers['content-length']);
  if (declared > limit) return done(bodyErrors.tooLarge());
  const reader = new JsonBodyReader(LIFT_BYTES);
  let received = 0;
  let over = false;

  const onData = (chunk: Buffer | string) => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    received += bytes.length;
    if (received > limit || (payload.receivedEncodedLength ?? 0) > limit) {
      over = true;
      stop();
      return done(bodyErrors.tooLarge());
    }
    reader.push(bytes);
  };
  const onEnd = (error?: Error & { statusCode?: number }) => {
    stop();
    if (over) return;
    if (error !== undefined && error !== null) {
      if (!(error instanceof GatewayError) && !(typeof error.statusCode === 'number'))
        error.statusCode = 400;
      return done(error);
    }
    if (!Number.isNaN(declared) && (payload.receivedEncodedLength || received) !== declared)
      return done(bodyErrors.lengthMismatch());
    if (received === 0) return done(bodyErrors.empty());
    let body: unknown;
    try {
      body = reader.finish();
    } catch (failure) {
      // Thrown from a stream's event, anything else would end the process: it is this request's.
      return done(
        failure instanceof InvalidJson
          ? bodyErrors.notJson()
          : failure instanceof PrototypeKey
            ? bodyErrors.prototypeKey()
            : asError(failure),
      );
    }
    done(null, body);
  };
  const stop = () => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onEnd);
  };
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onEnd);
  payload.resume();
}

function asError(failure: unknown): Error {
  return failure instanceof Error ? failure : new Error(String(failure));
}
