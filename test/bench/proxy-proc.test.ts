import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { listenOverflows, listenOverflowsIn } from '../../bench/proxy-proc.js';

/** /proc/net/netstat as Linux writes it, cut to a few columns: names, then values, per group. */
const NETSTAT = [
  'TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops',
  'TcpExt: 0 0 372 372',
  'IpExt: InNoRoutes ListenOverflows',
  'IpExt: 0 9',
  '',
].join('\n');

describe('the listen overflows the proxy bench reads', () => {
  it("reads TcpExt's ListenOverflows, not a column of the same name in another group", () => {
    assert.equal(listenOverflowsIn(NETSTAT), 372);
  });

  it('says nothing when the kernel does not count them', () => {
    assert.equal(listenOverflowsIn('TcpExt: SyncookiesSent\nTcpExt: 0\n'), undefined);
    assert.equal(listenOverflowsIn(''), undefined);
  });

  it("reads this machine's counter, where the kernel keeps one", () => {
    const overflows = listenOverflows();
    if (existsSync('/proc/net/netstat')) assert.equal(Number.isInteger(overflows), true);
    else assert.equal(overflows, undefined);
  });
});
