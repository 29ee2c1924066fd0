import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pipeline as streamPipeline } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { rehostImages, StorageFailure } from '../../src/channels/image-rehost.js';
import { pngSize } from '../../src/channels/png-size.js';
import { UpstreamHttp } from '../../src/channels/upstream-http.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type { ResultStore } from '../../src/storage/result-store.js';
import { startLoopbackServer } from '../fixtures/fake-upstream-server.js';

describe('re-hosting upstream images', () => {
  let server: Awaited<ReturnType<typeof startLoopbackServer>>;
  let http: UpstreamHttp;
  let png: Buffer;
  let jpeg: Buffer;
  const stored: Buffer[] = [];
  /** How each image reached storage: whole, or as a stream. */
  const handedOver: ('buffer' | 'stream')[] = [];
  /** Called once /stalled.png has sent its first bytes and stalled. */
  let onStalled: () => void = () => undefined;
  const results: ResultStore = {
    async save(image) {
      handedOver.push(Buffer.isBuffer(image) ? 'buffer' : 'stream');
      if (Buffer.isBuffer(image)) stored.push(image);
      else {
        const chunks: Buffer[] = [];
        for await (const chunk of image) chunks.push(chunk as Buffer);
        stored.push(Buffer.concat(chunks));
      }
      return `http://gateway.test/images/${stored.length}.png`;
    },
  };

  before(async () => {
    png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#aa0000' } })
      .png()
      .toBuffer();
    jpeg = await sharp({ create: { width: 50, height: 20, channels: 3, background: '#00aa00' } })
      .jpeg()
      .toBuffer();
    server = await startLoopbackServer((request, response, socket) => {
      if (request.path === '/a.png') response.end(png);
      else if (request.path === '/b.jpg') response.end(jpeg);
      else if (request.path === '/big.png') response.end(Buffer.concat([png, Buffer.alloc(4096)]));
      else if (request.path === '/huge.png')
        response.end(Buffer.concat([png, Buffer.alloc(2 ** 21)]));
      else if (request.path === '/chunked.png') {
        // Written in parts without a Content-Length: sent chunked, of unknown length.
        response.write(png.subarray(0, 8));
        response.end(png.subarray(8));
      } else if (request.path === '/stalled-small.png') {
        // A small declared length, so read whole: it stalls before its end.
        response.writeHead(200, { 'content-length': String(png.length) });
        response.write(png.subarray(0, 10));
      } else if (request.path === '/cut.png') {
        // Chunked, then the connection is dropped before the body ends.
        response.write(Buffer.concat([png, Buffer.alloc(2 ** 16)]));
        setTimeout(() => socket.destroy(), 20);
      } else if (request.path === '/garbage') {
        // Chunked bytes that are no image at all: the conversion to PNG fails.
        response.write(Buffer.alloc(4096, 7));
        response.end(Buffer.alloc(4096, 9));
      } else if (request.path === '/stalled.png') {
        response.write(png.subarray(0, 10));
        onStalled();
      } else {
        response.writeHead(404);
        response.end();
      }
    });
    http = new UpstreamHttp();
  });
  after(async () => {
    await http.close();
    await server.close();
  });

  const rehost = (
    urls: string[],
    options: {
      maxBytes?: number;
      timeoutMs?: number;
      signal?: AbortSignal;
      results?: ResultStore;
    } = {},
  ) =>
    rehostImages(
      urls.map((url) => ({ kind: 'upstream' as const, url })),
      'ds-test',
      'req-1',
      options.signal ?? new AbortController().signal,
      { http, results, ...options },
    );
  const failureOf = async (promise: Promise<unknown>): Promise<GatewayError> => {
    const error = await promise.then(
      () => assert.fail('expected a failure'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof GatewayError, String(error));
    return error;
  };
  const diskError = () =>
    Object.assign(new Error("ENOSPC: no space left on device, write '/srv/images/x.png'"), {
      code: 'ENOSPC',
      syscall: 'write',
    });
  /** Storage that writes what it is given into a sink failing after `goodBytes`, as a disk does. */
  const fullDisk = (goodBytes: number): ResultStore => ({
    async save(image) {
      if (Buffer.isBuffer(image)) throw diskError();
      let written = 0;
      await streamPipeline(
        image,
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            written += chunk.length;
            done(written > goodBytes ? diskError() : null);
          },
        }),
      );
      return 'http://gateway.test/images/never.png';
    },
  });

  it('stores PNGs byte for byte and converts other formats to PNG, keeping order', async () => {
    stored.length = 0;
    const hosted = await rehost([`${server.url}/a.png`, `${server.url}/b.jpg`]);
    assert.deepEqual(
      hosted.map(
        (image) => image.kind === 'stored' && image.url.startsWith('http://gateway.test/images/'),
      ),
      [true, true],
    );
    const storedFor = (index: number) => {
      const image = hosted[index];
      const number = image?.kind === 'stored' ? /(\d+)\.png$/.exec(image.url)?.[1] : undefined;
      return stored[Number(number) - 1] as Buffer;
    };
    assert.ok(storedFor(0).equals(png), 'the PNG is stored byte for byte, in its place');
    assert.deepEqual(pngSize(storedFor(1)), { width: 50, height: 20 }, 'the JPEG became a PNG');
  });

  it('reads a small image of declared length whole, and streams a large or undeclared one', async () => {
    stored.length = 0;
    handedOver.length = 0;
    await rehost([`${server.url}/a.png`]);
    await rehost([`${server.url}/huge.png`]);
    await rehost([`${server.url}/chunked.png`]);
    assert.deepEqual(handedOver, ['buffer', 'stream', 'stream']);
    assert.equal(stored[1]?.length, png.length + 2 ** 21, 'the large image arrived whole');
    assert.ok(stored[2]?.equals(png), 'the chunked image arrived byte for byte');
  });

  it('fails with 502 UpstreamError on a missing image, an oversized one or one that stalls', async () => {
    const failure = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => assert.fail('expected a failure'),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof GatewayError, String(error));
      assert.equal(error.code, 'UpstreamError');
      return error.message;
    };
    assert.equal(
      await failure(rehost([`${server.url}/missing.png`])),
      'could not fetch an image generated by channel ds-test: HTTP 404',
    );
    assert.match(
      await failure(rehost([`${server.url}/big.png`], { maxBytes: png.length + 100 })),
      /larger than/,
    );
    assert.match(
      await failure(rehost([`${server.url}/stalled.png`], { timeoutMs: 200 })),
      /could not fetch the images generated by channel ds-test within 200 ms/,
    );
    assert.match(await failure(rehost(['file:///etc/passwd'])), /not http\(s\)/);
  });

  it('answers 500 InternalError when our storage fails, hiding its message, whole or streamed', async () => {
    for (const path of ['/a.png', '/huge.png', '/chunked.png', '/b.jpg']) {
      const error = await failureOf(rehost([`${server.url}${path}`], { results: fullDisk(1) }));
      assert.ok(error instanceof StorageFailure, path);
      assert.equal(error.code, 'InternalError', path);
      assert.equal(error.status, 500);
      assert.match(error.message, /generated by channel ds-test could not be stored/);
      assert.doesNotMatch(error.message, /ENOSPC|\/srv/, 'the storage message stays in the log');
      assert.equal((error.cause as NodeJS.ErrnoException).code, 'ENOSPC', 'the cause is kept');
    }
  });

  it("keeps a download cut off or an undecodable image the upstream's, even while storage reads it", async () => {
    const storing = fullDisk(Number.POSITIVE_INFINITY);
    const cut = await failureOf(rehost([`${server.url}/cut.png`], { results: storing }));
    assert.equal(cut.code, 'UpstreamError');
    assert.match(cut.message, /^could not fetch an image generated by channel ds-test: /);
    const garbage = await failureOf(rehost([`${server.url}/garbage`], { results: storing }));
    assert.equal(garbage.code, 'UpstreamError');
    const whole = await failureOf(
      rehost([`${server.url}/a.png`], {
        results: storing,
        maxBytes: 100,
      }),
    );
    assert.equal(whole.code, 'UpstreamError', 'too large is the upstream image, not our storage');
  });

  it('gives up on a small image that stalls before its declared end, and goes on serving', async () => {
    await assert.rejects(
      rehost([`${server.url}/stalled-small.png`], { timeoutMs: 200 }),
      /could not fetch the images generated by channel ds-test within 200 ms/,
    );
    stored.length = 0;
    await rehost([`${server.url}/a.png`]);
    assert.ok(stored[0]?.equals(png));
  });

  it("gives up with the caller's reason when the caller leaves", async (t) => {
    const caller = new AbortController();
    onStalled = () => caller.abort(new Error('caller disconnected'));
    t.after(() => (onStalled = () => undefined));
    await assert.rejects(
      rehost([`${server.url}/stalled.png`], { signal: caller.signal }),
      /caller disconnected/,
    );
  });
});
