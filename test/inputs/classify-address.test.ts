import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressPolicy, normalizeHostname } from '../../src/inputs/address-guard.js';
import { type AddressClass, classifyAddress } from '../../src/inputs/classify-address.js';
import { parseIpAddress } from '../../src/inputs/ip-address.js';

const EXPECTED: [string, AddressClass][] = [
  // IPv4
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.15.255.255', 'public'],
  ['172.16.0.0', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.0', 'public'],
  ['192.167.255.255', 'public'],
  ['192.168.1.1', 'private'],
  ['192.169.0.0', 'public'],
  ['100.63.255.255', 'public'],
  ['100.64.0.0', 'shared'],
  ['100.127.255.255', 'shared'],
  ['100.128.0.0', 'public'],
  ['169.254.0.1', 'link-local'],
  ['169.254.169.254', 'cloud metadata'],
  ['100.100.100.200', 'cloud metadata'],
  ['168.63.129.16', 'cloud metadata'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.255', 'multicast'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['240.0.0.1', 'reserved'],
  // IPv6
  ['2606:4700:4700::1111', 'public'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::', 'unspecified'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf:ffff::1', 'link-local'],
  ['fec0::1', 'private'],
  ['fbff:ffff::1', 'public'],
  ['fc00::1', 'unique-local'],
  ['fdff:ffff::1', 'unique-local'],
  ['fd00:ec2::254', 'cloud metadata'],
  ['ff02::1', 'multicast'],
  ['FF05::2', 'multicast'],
  // IPv4-mapped and other IPv6 forms that reach an IPv4 address
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['0:0:0:0:0:ffff:7f00:0001', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:192.168.0.1', 'private'],
  ['::ffff:169.254.169.254', 'cloud metadata'],
  ['::ffff:a9fe:a9fe', 'cloud metadata'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:8.8.8.8', 'public'],
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::808:808', 'public'],
  ['2002:c0a8:0101::1', 'private'],
  ['::127.0.0.1', 'reserved'],
  // Cloud metadata and credential services beyond 169.254.169.254
  ['169.254.170.2', 'cloud metadata'], // AWS ECS container credentials
  ['169.254.170.23', 'cloud metadata'], // AWS EKS Pod Identity
  ['192.0.0.192', 'cloud metadata'], // Oracle Cloud
  ['192.0.0.191', 'reserved'],
  ['fd00:ec2::23', 'cloud metadata'], // AWS EKS Pod Identity over IPv6
  ['fd20:ce::254', 'cloud metadata'], // Google Cloud over IPv6
  ['::ffff:169.254.170.2', 'cloud metadata'],
  ['64:ff9b::a9fe:a9fe', 'cloud metadata'],
  ['2002:a9fe:a9fe::1', 'cloud metadata'],
  // Documentation (TEST-NET) and other special-purpose IPv4 ranges
  ['192.0.2.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.255', 'reserved'],
  ['203.0.114.0', 'public'],
  ['198.18.0.1', 'reserved'],
  ['192.88.99.1', 'reserved'],
  // IPv4-translated (SIIT) addresses reach the IPv4 address inside
  ['::ffff:0:127.0.0.1', 'loopback'],
  ['::ffff:0:7f00:1', 'loopback'],
  ['::ffff:0:10.1.2.3', 'private'],
  ['::ffff:0:169.254.169.254', 'cloud metadata'],
  ['::ffff:0:8.8.8.8', 'public'],
  // Special-purpose IPv6 ranges
  ['2001::1', 'reserved'], // Teredo
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
  ['2001:2::1', 'reserved'], // benchmarking
  ['2001:db8::1', 'reserved'],
  ['3fff::1', 'reserved'], // documentation
  ['100::1', 'reserved'], // discard-only
  ['5f00::1', 'reserved'], // segment routing
  ['64:ff9b:1::1', 'private'],
  ['2001:4860:4860::8888', 'public'],
  ['2a00:1450:4001:80b::200e', 'public'],
];

describe('classifyAddress', () => {
  for (const [address, expected] of EXPECTED) {
    it(`${address} is ${expected}`, () => assert.equal(classifyAddress(address), expected));
  }

  it('throws on something that is not an IP address', () => {
    assert.throws(() => classifyAddress('localhost'), TypeError);
  });
});

describe('parseIpAddress', () => {
  it('parses every IPv6 spelling to the same bytes', () => {
    const expected = parseIpAddress('::ffff:127.0.0.1')?.toByteArray();
    for (const spelling of ['::ffff:7f00:1', '[::FFFF:7F00:1]', '0:0:0:0:0:ffff:7f00:1']) {
      assert.deepEqual(parseIpAddress(spelling)?.toByteArray(), expected, spelling);
    }
    assert.deepEqual(
      Buffer.from(parseIpAddress('1:2:3:4:5:6:1.2.3.4')?.toByteArray() ?? []).toString('hex'),
      '00010002000300040005000601020304',
    );
    // IPv4-compatible, not IPv4-mapped: what a socket would connect to.
    assert.deepEqual(
      Buffer.from(parseIpAddress('::127.0.0.1')?.toByteArray() ?? []).toString('hex'),
      '0000000000000000000000007f000001',
    );
    assert.deepEqual(
      Buffer.from(parseIpAddress('::ffff:0:1.2.3.4')?.toByteArray() ?? []).toString('hex'),
      '0000000000000000ffff000001020304',
    );
  });

  it('returns undefined for host names and malformed addresses', () => {
    for (const text of ['localhost', 'example.com', '1.2.3', '1.2.3.256', ':::1', '']) {
      assert.equal(parseIpAddress(text), undefined, text);
    }
  });
});

describe('addressPolicy', () => {
  it('refuses every non-public class while private addresses are not allowed', () => {
    const strict = addressPolicy(false);
    assert.equal(strict('8.8.8.8'), undefined);
    assert.equal(strict('127.0.0.1'), 'loopback');
    assert.equal(strict('::ffff:10.0.0.1'), 'private');
  });

  it('lifts the guard when allowed, except for cloud metadata addresses', () => {
    const lenient = addressPolicy(true);
    assert.equal(lenient('127.0.0.1'), undefined);
    assert.equal(lenient('10.0.0.1'), undefined);
    assert.equal(lenient('fe80::1'), undefined);
    assert.equal(lenient('169.254.169.254'), 'cloud metadata');
    assert.equal(lenient('fd00:ec2::254'), 'cloud metadata');
    for (const metadata of [
      '169.254.170.2',
      '192.0.0.192',
      '100.100.100.200',
      '168.63.129.16',
      'fd20:ce::254',
      '::ffff:0:169.254.169.254',
      '::ffff:192.0.0.192',
    ]) {
      assert.equal(lenient(metadata), 'cloud metadata', metadata);
    }
  });

  it('refuses IPv4-translated, documentation and Teredo addresses in production', () => {
    const strict = addressPolicy(false);
    assert.equal(strict('::ffff:0:127.0.0.1'), 'loopback');
    assert.equal(strict('192.0.2.10'), 'reserved');
    assert.equal(strict('198.51.100.10'), 'reserved');
    assert.equal(strict('203.0.113.10'), 'reserved');
    assert.equal(strict('2001:0:4136:e378:8000:63bf:3fff:fdd2'), 'reserved');
  });

  it('normalizes host names before they are compared', () => {
    assert.equal(normalizeHostname('[::1]'), '::1');
    assert.equal(normalizeHostname('Metadata.Google.Internal.'), 'metadata.google.internal');
  });
});
