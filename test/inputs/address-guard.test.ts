// The address guard with the allowance off, against a real server on 127.0.0.1 that must never
// see a request: loopback, private, link-local and metadata targets, however they are spelled.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createInputLoader } from '../../src/inputs/create-input-loader.js';
import { rejectsWith } from './assert-gateway-error.js';
import { imagePath, makeJpeg, urlImage } from './image-fixtures.js';
import { bytesHandler, type ImageServer, startImageServer } from './image-server.js';

const PATH = imagePath(1);

describe('the address guard with private addresses not allowed', () => {
  const guarded = createInputLoader({ allowPrivateAddresses: false, totalTimeoutMs: 2000 });
  let server: ImageServer;
  let port: number;

  before(async () => {
    server = await startImageServer();
    port = server.port;
    server.serve('/image.jpg', bytesHandler(await makeJpeg(400, 300)));
  });
  after(() => server.close());

  const load = (url: string) => guarded.load([urlImage(url, 1)], new AbortController().signal);

  const refused: [string, () => string, RegExp][] = [
    [
      '127.0.0.1',
      () => `http://127.0.0.1:${port}/image.jpg`,
      /^127\.0\.0\.1 is a loopback address, which image URLs may not use$/,
    ],
    ['::1', () => `http://[::1]:${port}/image.jpg`, /^::1 is a loopback address/],
    [
      'IPv4-mapped ::ffff:127.0.0.1',
      () => `http://[::ffff:127.0.0.1]:${port}/image.jpg`,
      /is a loopback address/,
    ],
    [
      '127.0.0.1 as a decimal number',
      () => `http://2130706433:${port}/image.jpg`,
      /^127\.0\.0\.1 is a loopback address/,
    ],
    [
      '127.0.0.1 in hex',
      () => `http://0x7f.1:${port}/image.jpg`,
      /^127\.0\.0\.1 is a loopback address/,
    ],
    [
      'localhost (a name that resolves to loopback)',
      () => `http://localhost:${port}/image.jpg`,
      /^host localhost resolves to a loopback address/,
    ],
    [
      'LOCALHOST. (case and trailing dot)',
      () => `http://LOCALHOST.:${port}/image.jpg`,
      /^host localhost resolves to a loopback address/,
    ],
    ['0.0.0.0', () => `http://0.0.0.0:${port}/image.jpg`, /^0\.0\.0\.0 is the unspecified address/],
    ['10.0.0.1', () => 'http://10.0.0.1/image.jpg', /^10\.0\.0\.1 is a private address/],
    ['192.168.1.1', () => 'https://192.168.1.1/image.jpg', /is a private address/],
    ['172.16.0.1', () => 'http://172.16.0.1/image.jpg', /is a private address/],
    [
      '100.64.0.1 (CGNAT)',
      () => 'http://100.64.0.1/image.jpg',
      /is a shared \(carrier-grade NAT\) address/,
    ],
    [
      '169.254.169.254 (metadata)',
      () => 'http://169.254.169.254/latest/meta-data/',
      /^169\.254\.169\.254 is a cloud metadata address/,
    ],
    ['169.254.10.10 (link-local)', () => 'http://169.254.10.10/', /is a link-local address/],
    ['fe80::1 (link-local)', () => 'http://[fe80::1]/', /is a link-local address/],
    ['fd12::1 (unique-local)', () => 'http://[fd12::1]/', /is a unique-local address/],
    ['fd00:ec2::254 (metadata)', () => 'http://[fd00:ec2::254]/', /is a cloud metadata address/],
    [
      'metadata.google.internal',
      () => 'http://metadata.google.internal/computeMetadata/v1/',
      /^host metadata\.google\.internal is a cloud metadata service/,
    ],
    [
      'IPv4-translated ::ffff:0:127.0.0.1',
      () => `http://[::ffff:0:127.0.0.1]:${port}/image.jpg`,
      /^::ffff:0:7f00:1 is a loopback address/,
    ],
    ['192.0.2.1 (TEST-NET-1)', () => 'http://192.0.2.1/', /is a reserved address/],
    ['198.51.100.1 (TEST-NET-2)', () => 'http://198.51.100.1/', /is a reserved address/],
    ['203.0.113.1 (TEST-NET-3)', () => 'http://203.0.113.1/', /is a reserved address/],
    ['2001::1 (Teredo)', () => 'http://[2001::1]/', /is a reserved address/],
    [
      '169.254.170.2 (container credentials)',
      () => 'http://169.254.170.2/v2/credentials',
      /is a cloud metadata address/,
    ],
    ['224.0.0.1 (multicast)', () => 'http://224.0.0.1/', /is a multicast address/],
    ['255.255.255.255 (broadcast)', () => 'http://255.255.255.255/', /is the broadcast address/],
  ];

  for (const [name, url, message] of refused) {
    it(`refuses ${name} with InvalidURL before connecting`, async () => {
      await rejectsWith(load(url()), 'InvalidURL', PATH, message);
    });
  }

  it('never let a request through to the server', () => {
    assert.equal(server.hits('/image.jpg'), 0);
  });

  for (const [name, url] of [
    ['169.254.169.254', 'http://169.254.169.254/latest/meta-data/'],
    ['169.254.170.2 (container credentials)', 'http://169.254.170.2/v2/credentials'],
    ['192.0.0.192 (Oracle Cloud)', 'http://192.0.0.192/opc/v1/instance/'],
    ['100.100.100.200 (Alibaba Cloud)', 'http://100.100.100.200/latest/meta-data/'],
    ['[::ffff:0:169.254.169.254] (IPv4-translated)', 'http://[::ffff:0:169.254.169.254]/'],
  ] as const) {
    it(`refuses the cloud metadata address ${name} even when private addresses are allowed`, async () => {
      const allowed = createInputLoader({ allowPrivateAddresses: true, totalTimeoutMs: 2000 });
      await rejectsWith(
        allowed.load([urlImage(url, 1)], new AbortController().signal),
        'InvalidURL',
        PATH,
        /is a cloud metadata address, which image URLs may not use$/,
      );
    });
  }

  it('lets the same loopback URL through once the operator allows private addresses', async () => {
    const allowed = createInputLoader({ allowPrivateAddresses: true });
    const [loaded] = await allowed.load(
      [urlImage(`http://127.0.0.1:${port}/image.jpg`, 1)],
      new AbortController().signal,
    );
    assert.equal(loaded?.format, 'jpeg');
    assert.equal(server.hits('/image.jpg'), 1);
  });
});
