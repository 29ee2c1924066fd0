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
    const expected = parseIpAddress('::ffff:127.0.0.1')?.bytes;
    for (const spelling of ['::ffff:7f00:1', '[::FFFF:7F00:1]', '0:0:0:0:0:ffff:7f00:1']) {
      assert.deepEqual(parseIpAddress(spelling)?.bytes, expected, spelling);
    }
    assert.deepEqual(
      Buffer.from(parseIpAddress('1:2:3:4:5:6:1.2.3.4')?.bytes ?? []).toString('hex'),
      '00010002000300040005000601020304',
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
  });

  it('normalizes host names before they are compared', () => {
    assert.equal(normalizeHostname('[::1]'), '::1');
    assert.equal(normalizeHostname('Metadata.Google.Internal.'), 'metadata.google.internal');
  });
});
