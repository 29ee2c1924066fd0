// The http(s) side of the inputs stage: redirects, status codes, time-outs, size cut-offs,
// connecting only to the checked address, concurrency and cancellation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GatewayError } from '../../src/errors/gateway-error.js';
import {
  addressPolicy,
  type HostResolver,
  resolveWithSystemDns,
} from '../../src/inputs/address-guard.js';
import { createInputLoader } from '../../src/inputs/create-input-loader.js';
import { type FetchSettings, fetchImage } from '../../src/inputs/fetch-image.js';
import { rejectsWith } from './assert-gateway-error.js';
import { imagePath, makeJpeg, padTo, urlImage } from './image-fixtures.js';
import {
  bytesHandler,
  type Handler,
  type ImageServer,
  redirectHandler,
  startImageServer,
  statusHandler,
} from './image-server.js';
import { CancellationSource } from '../../src/support/cancellation.js';

const PATH = imagePath(3);
const MAX_BYTES = 20 * 1024 * 1024;
const signal = () => new AbortController().signal;

/** Sends headers (and optionally a first chunk), then nothing until the client gives up. */
function stallingHandler(headers: Record<string, string>, firstChunk?: Buffer): Handler {
  return (_request, response) => {
    response.writeHead(200, headers);
    if (firstChunk !== undefined) response.write(firstChunk);
    response.flushHeaders();
  };
}

function delayedHandler(delayMs: number, handler: Handler): Handler {
  return (request, response) => {
    setTimeout(() => handler(request, response), delayMs);
  };
}

describe('fetching image URLs', () => {
  const loader = createInputLoader({ allowPrivateAddresses: true });
  let server: ImageServer;
  let jpeg: Buffer;
  let jpegUrl: string;

  before(async () => {
    server = await startImageServer();
    jpeg = await makeJpeg(400, 300);
    jpegUrl = server.serve('/image.jpg', bytesHandler(jpeg, { contentType: 'image/jpeg' }));
    // /hop-N redirects to /hop-(N-1); /hop-0 is the image.
    server.serve('/hop-0', bytesHandler(jpeg));
    for (let hop = 1; hop <= 4; hop++)
      server.serve(`/hop-${hop}`, redirectHandler(`/hop-${hop - 1}`));
  });
  after(() => server.close());

  const load = (url: string, customLoader = loader) =>
    customLoader.load([urlImage(url, 3)], signal());
  const hopUrl = (hops: number) => `http://127.0.0.1:${server.port}/hop-${hops}`;

  describe('redirects', () => {
    it('follows 1 and 3 redirects, relative Locations included', async () => {
      for (const hops of [1, 3]) {
        const [loaded] = await load(hopUrl(hops));
        assert.equal(loaded?.width, 400, `${hops} hops`);
      }
    });

    it('refuses a 4th redirect', async () => {
      await rejectsWith(load(hopUrl(4)), 'InvalidURL', PATH, /^more than 3 redirects$/);
    });

    it('honours a lower maxRedirects', async () => {
      const strict = createInputLoader({ allowPrivateAddresses: true, maxRedirects: 0 });
      await rejectsWith(load(hopUrl(1), strict), 'InvalidURL', PATH, /^more than 0 redirects$/);
    });

    it('follows every redirect status: 301, 302, 303, 307, 308', async () => {
      for (const status of [301, 302, 303, 307, 308]) {
        const url = server.serve(`/status-${status}`, redirectHandler('/image.jpg', status));
        const [loaded] = await load(url);
        assert.equal(loaded?.format, 'jpeg', String(status));
      }
    });

    it('refuses a redirect to a non-http scheme, a malformed target or without Location', async () => {
      const toFile = server.serve('/to-file', redirectHandler('file:///etc/passwd'));
      await rejectsWith(load(toFile), 'InvalidURL', PATH, /redirect target has scheme file/);
      const toMalformed = server.serve('/to-malformed', redirectHandler('http://[nope'));
      await rejectsWith(load(toMalformed), 'InvalidURL', PATH, /redirect target is malformed/);
      const noLocation = server.serve('/no-location', (_request, response) =>
        response.writeHead(302).end(),
      );
      await rejectsWith(load(noLocation), 'InvalidURL', PATH, /HTTP 302 without a Location/);
    });

    it('re-checks each redirect target: metadata addresses stay refused even when private ones are allowed', async () => {
      for (const target of [
        'http://169.254.169.254/latest/meta-data/',
        'http://[fd00:ec2::254]/latest/meta-data/',
        'http://metadata.google.internal/computeMetadata/v1/',
        'http://[::ffff:169.254.169.254]/',
      ]) {
        const url = server.serve('/to-metadata', redirectHandler(target));
        await rejectsWith(load(url), 'InvalidURL', PATH, /cloud metadata/);
      }
    });

    it('re-checks each redirect target against the address guard (first hop allowed, second private)', async () => {
      const settings: FetchSettings = {
        // Only the test server's address is let through, as a public host would be.
        policy: (address) => (address === '127.0.0.1' ? undefined : addressPolicy(false)(address)),
        resolveHost: resolveWithSystemDns,
        connectTimeoutMs: 1000,
        totalTimeoutMs: 2000,
        maxBytes: MAX_BYTES,
        maxRedirects: 3,
      };
      assert.equal((await fetchImage(jpegUrl, PATH, settings, signal())).length, jpeg.length);
      const toPrivate = server.serve('/to-private', redirectHandler('http://10.0.0.1/image.jpg'));
      await rejectsWith(
        fetchImage(toPrivate, PATH, settings, signal()),
        'InvalidURL',
        PATH,
        /^10\.0\.0\.1 is a private address, which image URLs may not use$/,
      );
      const toLoopbackV6 = server.serve(
        '/to-loopback-v6',
        redirectHandler(`http://[::1]:${server.port}/image.jpg`),
      );
      await rejectsWith(
        fetchImage(toLoopbackV6, PATH, settings, signal()),
        'InvalidURL',
        PATH,
        /^::1 is a loopback address/,
      );
    });
  });

  describe('status codes and transport failures', () => {
    it('refuses 404 and 500 with InvalidURL naming the status', async () => {
      for (const status of [404, 500, 204, 304]) {
        const url = server.serve(`/answer-${status}`, statusHandler(status));
        const expected =
          status === 204 ? /unsupported image format/ : new RegExp(`HTTP ${status}$`);
        await rejectsWith(
          load(url),
          status === 204 ? 'InvalidImage' : 'InvalidURL',
          PATH,
          expected,
        );
      }
    });

    it('refuses a server that refuses the connection', async () => {
      const closed = await startImageServer();
      const url = closed.serve('/gone', bytesHandler(jpeg));
      await closed.close();
      await rejectsWith(
        load(url),
        'InvalidURL',
        PATH,
        /could not fetch the image \(ECONNREFUSED\)/,
      );
    });

    it('refuses a response that ends before its Content-Length', async () => {
      const url = server.serve('/short', (_request, response) => {
        response.writeHead(200, { 'content-length': String(jpeg.length + 100) });
        response.write(jpeg, () => response.socket?.destroy());
      });
      await rejectsWith(load(url), 'InvalidURL', PATH, /could not fetch the image|ended after/);
    });
  });

  describe('time-outs', () => {
    it('gives up on a slow server at the total time-out', async () => {
      const quick = createInputLoader({ allowPrivateAddresses: true, totalTimeoutMs: 300 });
      const headersOnly = server.serve(
        '/stall-headers',
        stallingHandler({ 'content-type': 'image/jpeg' }, jpeg.subarray(0, 100)),
      );
      const noHeaders = server.serve('/stall-all', () => undefined);
      for (const url of [headersOnly, noHeaders]) {
        const started = performance.now();
        await rejectsWith(
          load(url, quick),
          'InvalidURL',
          PATH,
          /^no complete response within 300 ms$/,
        );
        const elapsed = performance.now() - started;
        assert.ok(elapsed >= 290 && elapsed < 1500, `took ${elapsed} ms`);
      }
    });

    it('counts every redirect hop in the one total time-out', async () => {
      const quick = createInputLoader({ allowPrivateAddresses: true, totalTimeoutMs: 300 });
      for (let hop = 1; hop <= 3; hop++) {
        const next = hop === 1 ? '/image.jpg' : `/slow-hop-${hop - 1}`;
        server.serve(`/slow-hop-${hop}`, delayedHandler(120, redirectHandler(next)));
      }
      const url = `http://127.0.0.1:${server.port}/slow-hop-3`;
      await rejectsWith(load(url, quick), 'InvalidURL', PATH, /within 300 ms/);
    });

    it('counts DNS lookups in the total time-out', async () => {
      const slowDns: HostResolver = () =>
        new Promise((resolve) =>
          setTimeout(() => resolve([{ address: '127.0.0.1', family: 4 }]), 1000),
        );
      const settings: FetchSettings = {
        policy: addressPolicy(true),
        resolveHost: slowDns,
        connectTimeoutMs: 1000,
        totalTimeoutMs: 200,
        maxBytes: MAX_BYTES,
        maxRedirects: 3,
      };
      const started = performance.now();
      await rejectsWith(
        fetchImage(`http://slow-dns.test:${server.port}/image.jpg`, PATH, settings, signal()),
        'InvalidURL',
        PATH,
        /within 200 ms/,
      );
      assert.ok(performance.now() - started < 900);
    });
  });

  describe('the 20 MB cut-off', () => {
    it('refuses from Content-Length before reading the body', async () => {
      const url = server.serve(
        '/declared-huge',
        stallingHandler({ 'content-length': String(MAX_BYTES + 1) }, jpeg),
      );
      const started = performance.now();
      await rejectsWith(
        load(url),
        'InvalidImage',
        PATH,
        /^image is larger than 20 MB \(20971520 bytes\): the server declares 20971521 bytes \(Content-Length\)$/,
      );
      assert.ok(performance.now() - started < 1000);
    });

    it('refuses a streamed body without Content-Length once it passes the limit', async () => {
      const huge = padTo(jpeg, MAX_BYTES + 64 * 1024);
      const url = server.serve('/streamed-huge', bytesHandler(huge, { chunked: true }));
      await rejectsWith(load(url), 'InvalidImage', PATH, /passed 20971520 bytes while streaming/);
    });

    it('accepts a streamed body without Content-Length under the limit', async () => {
      const url = server.serve(
        '/streamed-small',
        bytesHandler(padTo(jpeg, 3 * 1024 * 1024), { chunked: true }),
      );
      const [loaded] = await load(url);
      assert.equal(loaded?.bytes().length, 3 * 1024 * 1024);
    });

    it('honours a lower maxBytes for both ways', async () => {
      const small = createInputLoader({ allowPrivateAddresses: true, maxBytes: 1000 });
      const padded = padTo(jpeg, 5000);
      const declared = server.serve('/declared-jpeg', bytesHandler(padded));
      await rejectsWith(load(declared, small), 'InvalidImage', PATH, /larger than 1000 bytes/);
      const chunked = server.serve('/chunked-jpeg', bytesHandler(padded, { chunked: true }));
      await rejectsWith(load(chunked, small), 'InvalidImage', PATH, /while streaming/);
    });
  });

  describe('connecting to the checked address only (DNS rebinding)', () => {
    it('connects to the address it checked and never asks DNS again', async () => {
      const answers = ['127.0.0.1', '10.0.0.1'];
      let lookups = 0;
      const rebinding: HostResolver = async () => [
        { address: answers[Math.min(lookups++, 1)] as string, family: 4 },
      ];
      const hostsSeen: string[] = [];
      const url = server.serve('/rebind.jpg', (request, response) => {
        hostsSeen.push(request.headers.host ?? '');
        bytesHandler(jpeg)(request, response);
      });
      const settings: FetchSettings = {
        policy: (address) => (address === '127.0.0.1' ? undefined : addressPolicy(false)(address)),
        resolveHost: rebinding,
        connectTimeoutMs: 1000,
        totalTimeoutMs: 2000,
        maxBytes: MAX_BYTES,
        maxRedirects: 3,
      };
      // images.rebind.test exists in no DNS: the fetch only works if the socket uses the pin.
      const named = url.replace('127.0.0.1', 'images.rebind.test');
      const bytes = await fetchImage(named, PATH, settings, signal());
      assert.equal(bytes.length, jpeg.length);
      assert.equal(lookups, 1);
      assert.deepEqual(hostsSeen, [`images.rebind.test:${server.port}`]);
      // The second lookup answers 10.0.0.1: now the guard refuses before any connection.
      await rejectsWith(
        fetchImage(named, PATH, settings, signal()),
        'InvalidURL',
        PATH,
        /resolves to a private address/,
      );
      assert.equal(hostsSeen.length, 1);
    });

    it('refuses a host when any of its addresses is refused', async () => {
      const mixed: HostResolver = async () => [
        { address: '127.0.0.1', family: 4 },
        { address: '192.168.0.10', family: 4 },
      ];
      const settings: FetchSettings = {
        policy: (address) => (address === '127.0.0.1' ? undefined : addressPolicy(false)(address)),
        resolveHost: mixed,
        connectTimeoutMs: 1000,
        totalTimeoutMs: 2000,
        maxBytes: MAX_BYTES,
        maxRedirects: 3,
      };
      await rejectsWith(
        fetchImage(`http://mixed.test:${server.port}/image.jpg`, PATH, settings, signal()),
        'InvalidURL',
        PATH,
        /^host mixed\.test resolves to a private address/,
      );
    });

    it('refuses a host that does not resolve', async () => {
      const nothing: HostResolver = async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      };
      const settings: FetchSettings = {
        policy: addressPolicy(true),
        resolveHost: nothing,
        connectTimeoutMs: 1000,
        totalTimeoutMs: 2000,
        maxBytes: MAX_BYTES,
        maxRedirects: 3,
      };
      await rejectsWith(
        fetchImage('http://nowhere.test/image.jpg', PATH, settings, signal()),
        'InvalidURL',
        PATH,
        /^host nowhere\.test could not be resolved$/,
      );
    });
  });

  describe('several images of one request', () => {
    it('fetches them concurrently and returns them in order', async () => {
      const urls = [0, 1, 2, 3].map((index) =>
        server.serve(`/slow-${index}`, delayedHandler(250, bytesHandler(jpeg))),
      );
      const started = performance.now();
      const loaded = await loader.load(
        urls.map((url, index) => urlImage(url, index + 1)),
        signal(),
      );
      const elapsed = performance.now() - started;
      assert.deepEqual(
        loaded.map((image) => image.path),
        [1, 2, 3, 4].map(imagePath),
      );
      assert.ok(
        elapsed < 900,
        `took ${elapsed} ms for 4 images of 250 ms each; one after another is 1000`,
      );
    });

    it('fails on the first bad image without waiting for the others', async () => {
      const slow = server.serve('/never', () => undefined);
      const missing = server.serve('/missing', statusHandler(404));
      const started = performance.now();
      await rejectsWith(
        loader.load([urlImage(slow, 1), urlImage(missing, 2)], signal()),
        'InvalidURL',
        imagePath(2),
        /HTTP 404$/,
      );
      assert.ok(performance.now() - started < 1000);
    });

    it('aborts the fetches when the request is cancelled, with the request signal reason', async () => {
      const controller = new AbortController();
      const reason = new Error('client went away');
      // The caller leaves once the fetch has reached the server, which never answers it.
      const hanging = server.serve('/hang', () => controller.abort(reason));
      await assert.rejects(loader.load([urlImage(hanging, 1)], controller.signal), (error) => {
        assert.equal(error, reason);
        assert.ok(!(error instanceof GatewayError));
        return true;
      });
      await assert.rejects(loader.load([urlImage(jpegUrl, 1)], controller.signal), reason);
    });

    it("aborts the fetches when the request's own CancellationSource is aborted", async () => {
      const cancellation = new CancellationSource();
      const reason = new Error('client went away');
      const hanging = server.serve('/hang-cancelled', () => cancellation.abort(reason));
      await assert.rejects(loader.load([urlImage(hanging, 1)], cancellation), (error) => {
        assert.equal(error, reason);
        return true;
      });
    });
  });
});
