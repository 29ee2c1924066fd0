import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';

function problemOf(value: string): string {
  try {
    loadConfig({ IMAGEGATE_PUBLIC_HOSTS: value });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.join('\n');
    throw error;
  }
  assert.fail(`expected ${value} to be refused`);
}

describe('IMAGEGATE_PUBLIC_HOSTS', () => {
  it('is unset by default: the listening addresses and localhost are followed', () => {
    assert.equal(loadConfig({}).publicHosts, undefined);
  });

  it('keeps Host values lowercased, once each: names, IPv4, bracketed IPv6, with or without a port', () => {
    assert.deepEqual(
      loadConfig({
        IMAGEGATE_PUBLIC_HOSTS:
          'Images.Example.com, localhost:8080, 10.0.0.5:8080, [::1]:8080, images.example.com',
      }).publicHosts,
      ['images.example.com', 'localhost:8080', '10.0.0.5:8080', '[::1]:8080'],
    );
  });

  it('refuses schemes, paths, credentials, bad ports and bare IPv6, naming the entry', () => {
    for (const entry of [
      'http://images.example.com',
      'images.example.com/gw',
      'user@images.example.com',
      'images.example.com:0',
      'images.example.com:65536',
      '::1',
      '-bad.example.com',
      'a b',
    ])
      assert.match(
        problemOf(`ok.example.com,${entry}`),
        new RegExp(
          `^IMAGEGATE_PUBLIC_HOSTS must list hosts such as .*, got "${entry.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}"$`,
        ),
      );
  });
});
