import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { describe, it } from 'node:test';
import { PublicOrigins } from '../../src/http/public-origins.js';

const listening = (host: string, hosts?: readonly string[]) =>
  new PublicOrigins({
    publicBaseUrl: undefined,
    listeningBaseUrl: `http://${host.includes(':') ? `[${host}]` : host}:0`,
    host,
    hosts,
  });

const at = (address: string, port: number) => ({
  address,
  family: address.includes(':') ? 'IPv6' : 'IPv4',
  port,
});

describe('PublicOrigins', () => {
  it('before listening, and with a public base URL, names the base whatever the Host', () => {
    const origins = listening('127.0.0.1');
    assert.equal(origins.originFor('localhost:8080'), 'http://127.0.0.1:0');
    const based = new PublicOrigins({
      publicBaseUrl: 'https://cdn.example.com/gw/',
      listeningBaseUrl: 'http://127.0.0.1:8080',
      host: '127.0.0.1',
      hosts: ['localhost:8080'],
    });
    based.listening([at('127.0.0.1', 8080)]);
    assert.equal(based.canonical(), 'https://cdn.example.com/gw');
    assert.equal(based.originFor('localhost:8080'), 'https://cdn.example.com/gw');
    assert.equal(based.presenterFor('localhost:8080'), undefined);
  });

  it('follows the listening addresses at the real port, loopback names at any, and nothing else', () => {
    const origins = listening('127.0.0.1');
    origins.listening([at('127.0.0.1', 8080)]);
    assert.equal(origins.canonical(), 'http://127.0.0.1:8080');
    assert.equal(origins.originFor('LocalHost:8080'), 'http://localhost:8080');
    assert.equal(origins.originFor('127.0.0.1:8080'), 'http://127.0.0.1:8080');
    // A port forward reaches the gateway from the caller's own machine, at another port.
    assert.equal(origins.originFor('localhost:9000'), 'http://localhost:9000');
    assert.equal(origins.originFor('[::1]:9000'), 'http://[::1]:9000');
    assert.equal(origins.originFor('localhost'), 'http://localhost');
    assert.ok(origins.isAllowedOrigin('http://localhost:9000'));
    for (const host of [
      undefined,
      '',
      'localhost:99999',
      'localhost:0',
      '127.0.0.2:8080',
      'localhost.evil.example.com:8080',
      'evil.example.com',
      'localhost:8080@evil',
      '127.0.0.1:8080/x',
    ])
      assert.equal(origins.originFor(host), 'http://127.0.0.1:8080', String(host));
    assert.ok(!origins.isAllowedOrigin('http://evil.example.com'));
  });

  it('brackets IPv6 addresses, and takes a Host without its port at port 80', () => {
    const origins = listening('::1');
    origins.listening([at('::1', 80)]);
    assert.equal(origins.originFor('[::1]:80'), 'http://[::1]');
    assert.equal(origins.originFor('[::1]'), 'http://[::1]');
    assert.equal(origins.originFor('localhost'), 'http://localhost');
    assert.ok(origins.isAllowedOrigin(new URL('http://localhost:80/images/x.png').origin));
  });

  it("behind a wildcard address, follows every interface's address", () => {
    const origins = listening('0.0.0.0');
    origins.listening([at('0.0.0.0', 8080)]);
    const ipv4 = Object.values(networkInterfaces())
      .flatMap((entries) => entries ?? [])
      .filter((entry) => entry.family === 'IPv4');
    assert.ok(ipv4.length > 0);
    for (const entry of ipv4)
      assert.equal(origins.originFor(`${entry.address}:8080`), `http://${entry.address}:8080`);
    assert.equal(origins.originFor('0.0.0.0:8080'), 'http://0.0.0.0:8080', 'the base itself');
    assert.equal(origins.originFor('evil.example.com:8080'), 'http://0.0.0.0:8080');
  });

  it('with a list of hosts, follows those only', () => {
    const origins = listening('127.0.0.1', ['images.test', 'gateway.test:8443']);
    origins.listening([at('127.0.0.1', 8080)]);
    assert.equal(origins.originFor('images.test'), 'http://images.test');
    assert.equal(origins.originFor('gateway.test:8443'), 'http://gateway.test:8443');
    assert.equal(origins.originFor('localhost:8080'), 'http://127.0.0.1:8080');
    assert.equal(origins.originFor('localhost:9000'), 'http://127.0.0.1:8080');
    assert.ok(origins.isAllowedOrigin('http://images.test'));
    assert.ok(!origins.isAllowedOrigin('https://images.test'));
    assert.ok(!origins.isAllowedOrigin('http://localhost:8080'));
  });

  it("rewrites only our images' URLs, to the request's origin", () => {
    const origins = listening('127.0.0.1');
    origins.listening([at('127.0.0.1', 8080)]);
    assert.equal(origins.presenterFor('127.0.0.1:8080'), undefined);
    const present = origins.presenterFor('localhost:8080');
    assert.ok(present !== undefined);
    assert.equal(
      present('http://127.0.0.1:8080/images/abc.png?expires=1&signature=s'),
      'http://localhost:8080/images/abc.png?expires=1&signature=s',
    );
    const upstream = 'https://upstream.example.com/images/abc.png';
    assert.equal(present(upstream), upstream);
    assert.equal(
      present('http://127.0.0.1:8080/other/abc.png'),
      'http://127.0.0.1:8080/other/abc.png',
    );
  });
});
