import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { handleError, sendError } from '../../src/http/error-reply.js';
import { requestIdFor } from '../../src/http/hooks/request-id.js';
import { registerImageRoutes } from '../../src/http/routes/image-routes.js';
import {
  createResultStorage,
  type ResultStorage,
} from '../../src/storage/create-result-storage.js';
import { newImageId } from '../../src/storage/object-keys.js';
import { IMAGE_URL_VALIDITY_SECONDS } from '../../src/storage/signed-url.js';
import { BACKENDS, type OpenedBackend } from './backends.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const SECRET_BYTES = Buffer.concat([PNG_SIGNATURE, Buffer.from('top secret file outside images')]);
const T0 = Date.UTC(2030, 5, 1, 8, 15, 0);

/** A PNG-looking payload of the given size; the route never looks inside. */
function fakePng(size: number): Buffer {
  return Buffer.concat([PNG_SIGNATURE, randomBytes(size - PNG_SIGNATURE.length)]);
}

/** The parts of app.ts the image routes depend on: request ids, error handler, JSON 404s. */
function buildTestApp(storage: ResultStorage): FastifyInstance {
  const app = Fastify({ logger: false, genReqId: requestIdFor, requestIdHeader: false });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new GatewayError('NotFound', `no route for ${request.method}`)),
  );
  registerImageRoutes(app, { blobs: storage.blobs, urls: storage.urls });
  return app;
}

/** Path and query of a URL the store handed out, as a client would request it. */
function pathOf(url: string): string {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
}

for (const backend of BACKENDS) {
  describe(`image routes on ${backend.name}`, () => {
    const clock = { now: T0 };
    let opened: OpenedBackend;
    let storage: ResultStorage;
    let app: FastifyInstance;
    let image: Buffer;
    let imageUrl: string;

    before(async () => {
      opened = await backend.open();
      storage = createResultStorage({
        storage: opened.target,
        publicBaseUrl: 'https://img.example.com',
        signingKey: new Uint8Array(32).fill(3),
        uploadSigningKey: new Uint8Array(32).fill(4),
        now: () => clock.now,
      });
      app = buildTestApp(storage);
      image = fakePng(50_000);
      imageUrl = await storage.results.save(image);
      if (opened.dataDir !== undefined) {
        await writeFile(path.join(opened.dataDir, 'secret.png'), SECRET_BYTES);
        await writeFile(path.join(opened.dataDir, 'images', 'secret.png'), SECRET_BYTES);
      }
    });
    after(async () => {
      await app.close();
      await storage.close();
      await opened.close();
    });

    it('hands out a URL under the public base with a 24-hour expiry', () => {
      assert.match(
        imageUrl,
        /^https:\/\/img\.example\.com\/images\/[A-Za-z0-9_-]{16,64}\.png\?expires=[0-9]+&signature=[A-Za-z0-9_-]{43}$/,
      );
      assert.equal(
        new URL(imageUrl).searchParams.get('expires'),
        String(T0 / 1000 + IMAGE_URL_VALIDITY_SECONDS),
      );
    });

    it('GET serves the exact bytes as image/png with length, caching headers and an ETag', async () => {
      const response = await app.inject({ method: 'GET', url: pathOf(imageUrl) });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-type'], 'image/png');
      assert.equal(response.headers['content-length'], String(image.length));
      assert.equal(
        response.headers['cache-control'],
        `private, max-age=${IMAGE_URL_VALIDITY_SECONDS}, immutable`,
      );
      assert.match(String(response.headers.etag), /^"[A-Za-z0-9_-]{16,64}"$/);
      assert.equal(response.headers['x-content-type-options'], 'nosniff');
      assert.deepEqual(response.rawPayload, image);
    });

    it('HEAD answers the same headers without a body, asking the store for the size only', async () => {
      opened.s3?.requests.splice(0);
      const response = await app.inject({ method: 'HEAD', url: pathOf(imageUrl) });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-type'], 'image/png');
      assert.equal(response.headers['content-length'], String(image.length));
      assert.match(String(response.headers['cache-control']), /^private, max-age=\d+, immutable$/);
      assert.ok(response.headers.etag);
      assert.equal(response.rawPayload.length, 0);
      if (opened.s3 !== undefined)
        assert.deepEqual(
          opened.s3.requests.map((request) => request.operation),
          ['HeadObject'],
        );
    });

    it('counts max-age down to the expiry', async () => {
      clock.now = T0 + 20 * 3600 * 1000;
      try {
        const response = await app.inject({ method: 'GET', url: pathOf(imageUrl) });
        assert.equal(response.statusCode, 200);
        assert.equal(response.headers['cache-control'], `private, max-age=${4 * 3600}, immutable`);
      } finally {
        clock.now = T0;
      }
    });

    it('answers a matching If-None-Match with 304 and no body', async () => {
      const first = await app.inject({ method: 'GET', url: pathOf(imageUrl) });
      const response = await app.inject({
        method: 'GET',
        url: pathOf(imageUrl),
        headers: { 'if-none-match': String(first.headers.etag) },
      });
      assert.equal(response.statusCode, 304);
      assert.equal(response.rawPayload.length, 0);
    });

    it('streams an image saved from a stream, over a real socket', async () => {
      const big = fakePng(3 * 1024 * 1024 + 17);
      const chunks = Array.from({ length: Math.ceil(big.length / 65_536) }, (_, index) =>
        big.subarray(index * 65_536, (index + 1) * 65_536),
      );
      const url = await storage.results.save(Readable.from(chunks));
      const served = buildTestApp(storage);
      const address = await served.listen({ host: '127.0.0.1', port: 0 });
      try {
        const get = await fetch(`${address}${pathOf(url)}`);
        assert.equal(get.status, 200);
        assert.equal(get.headers.get('content-length'), String(big.length));
        assert.deepEqual(Buffer.from(await get.arrayBuffer()), big);
        const head = await fetch(`${address}${pathOf(url)}`, { method: 'HEAD' });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('content-length'), String(big.length));
        assert.equal((await head.arrayBuffer()).byteLength, 0);
      } finally {
        await served.close();
      }
    });

    describe('refusals: JSON 404 NotFound, never file bytes', () => {
      const parsed = () => new URL(imageUrl);
      const id = () => parsed().pathname.split('/').pop()?.replace('.png', '') ?? '';
      const expires = () => parsed().searchParams.get('expires') ?? '';
      const signature = () => parsed().searchParams.get('signature') ?? '';

      async function assertRefused(url: string, message: RegExp, method: 'GET' | 'HEAD' = 'GET') {
        const response = await app.inject({ method, url });
        assert.equal(response.statusCode, 404, `${method} ${url}`);
        assert.match(String(response.headers['content-type']), /^application\/json/, url);
        assert.notEqual(response.headers['content-type'], 'image/png');
        assert.equal(response.headers.etag, undefined, url);
        assert.ok(!response.rawPayload.includes(PNG_SIGNATURE), `${url} leaked PNG bytes`);
        assert.ok(!response.rawPayload.includes(image.subarray(8, 40)), url);
        if (method === 'GET') {
          const body = response.json();
          assert.equal(body.code, 'NotFound', url);
          assert.match(body.message, message, url);
          assert.equal(body.request_id, response.headers['x-request-id']);
          // The image route marks its refusals no-store; a URL that matches no route at all
          // gets the app's plain 404. Neither may carry the image's caching header.
          assert.ok(
            [undefined, 'no-store'].includes(response.headers['cache-control'] as string),
            url,
          );
        }
      }

      it('a wrong signature', async () => {
        const wrong = signature().startsWith('A')
          ? `B${signature().slice(1)}`
          : `A${signature().slice(1)}`;
        for (const method of ['GET', 'HEAD'] as const)
          await assertRefused(
            `/images/${id()}.png?expires=${expires()}&signature=${wrong}`,
            /signature does not match/,
            method,
          );
        await assertRefused(`/images/${id()}.png?expires=${expires()}`, /signature does not match/);
        const response = await app.inject(
          `/images/${id()}.png?expires=${expires()}&signature=${wrong}`,
        );
        assert.equal(response.headers['cache-control'], 'no-store');
      });

      it('a tampered expiry', async () => {
        const later = Number(expires()) + 7 * 24 * 3600;
        await assertRefused(
          `/images/${id()}.png?expires=${later}&signature=${signature()}`,
          /signature does not match/,
        );
      });

      it('an expired URL', async () => {
        clock.now = T0 + IMAGE_URL_VALIDITY_SECONDS * 1000;
        try {
          for (const method of ['GET', 'HEAD'] as const)
            await assertRefused(pathOf(imageUrl), /expired at 2030-06-02T08:15:00.000Z/, method);
        } finally {
          clock.now = T0;
        }
      });

      it('an unknown id: with a borrowed signature, and properly signed but never stored', async () => {
        const other = { id: newImageId(), expiresAt: storage.urls.expiresAtFromNow() };
        await assertRefused(
          `/images/${other.id}.png?expires=${expires()}&signature=${signature()}`,
          /signature does not match/,
        );
        await assertRefused(pathOf(storage.urls.urlOf(other)), /image no longer exists/);
      });

      it('malformed ids and missing parameters', async () => {
        const query = `?expires=${expires()}&signature=${signature()}`;
        await assertRefused(`/images/${id()}.jpg${query}`, /no image has this name/);
        await assertRefused(`/images/${id()}!.png${query}`, /no image has this name/);
        await assertRefused(`/images/${'a'.repeat(65)}.png${query}`, /no image has this name/);
        await assertRefused(`/images/${'a'.repeat(15)}.png${query}`, /no image has this name/);
        await assertRefused(`/images/${id()}.png`, /lacks a valid expires/);
        await assertRefused(
          `/images/${id()}.png?expires=soon&signature=${signature()}`,
          /lacks a valid expires/,
        );
        await assertRefused(
          `/images/${id()}.png?expires=${expires()}&expires=${expires()}&signature=${signature()}`,
          /lacks a valid expires/,
        );
      });

      it('path traversal attempts', async () => {
        const query = `?expires=${expires()}&signature=${signature()}`;
        const attempts = [
          `/images/..%2Fsecret.png${query}`,
          `/images/%2e%2e%2fsecret.png${query}`,
          `/images/%2E%2E%2F%2E%2E%2Fsecret.png${query}`,
          `/images/..%5Csecret.png${query}`,
          `/images/../secret.png${query}`,
          `/images/secret.png${query}`,
          `/images/${id()}.png%00.png${query}`,
          `/images/${'A'.repeat(24)}%2F..%2F..%2Fsecret.png${query}`,
          `/images//etc/passwd${query}`,
          `/images/${encodeURIComponent(`../${new Date(Number(expires()) * 1000).toISOString().slice(0, 13)}/${id()}`)}.png${query}`,
        ];
        for (const attempt of attempts) await assertRefused(attempt, /./);
      });
    });

    it('answers other methods with 405 and Allow: GET, HEAD', async () => {
      for (const method of ['POST', 'PUT', 'DELETE'] as const) {
        const response = await app.inject({ method, url: pathOf(imageUrl) });
        assert.equal(response.statusCode, 405, method);
        assert.equal(response.json().code, 'MethodNotAllowed');
        assert.equal(response.headers.allow, 'GET, HEAD');
      }
      const still = await app.inject({ method: 'HEAD', url: pathOf(imageUrl) });
      assert.equal(still.statusCode, 200);
    });
  });
}
