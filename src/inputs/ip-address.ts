import { isIPv4, isIPv6 } from 'node:net';

export interface IpAddress {
  family: 4 | 6;
  /** 4 bytes for IPv4, 16 for IPv6, network order. */
  bytes: Uint8Array;
}

function ipv4Bytes(text: string): Uint8Array {
  return Uint8Array.from(text.split('.'), Number);
}

function ipv6Bytes(text: string): Uint8Array {
  const dottedTail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  // The dotted tail stands for the last two groups; it is written over them at the end.
  const hexPart = dottedTail === null ? text : `${text.slice(0, dottedTail.index)}0:0`;
  const [head = '', tail = ''] = hexPart.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const zeroGroups = new Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  const bytes = new Uint8Array(16);
  [...headGroups, ...zeroGroups, ...tailGroups].forEach((group, index) => {
    const value = Number.parseInt(group, 16);
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  });
  if (dottedTail !== null) bytes.set(ipv4Bytes(dottedTail[1] as string), 12);
  return bytes;
}

/**
 * Parses a literal IPv4 address (dotted quad) or IPv6 address (any textual form, with an
 * optional `%zone` and optional brackets). Anything else, including host names, is undefined.
 */
export function parseIpAddress(text: string): IpAddress | undefined {
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const withoutZone = unbracketed.split('%')[0] as string;
  if (isIPv4(withoutZone)) return { family: 4, bytes: ipv4Bytes(withoutZone) };
  if (isIPv6(withoutZone)) return { family: 6, bytes: ipv6Bytes(withoutZone.toLowerCase()) };
  return undefined;
}

/** Whether the first `prefixLength` bits of `address` equal those of `network`. */
export function inPrefix(address: Uint8Array, network: Uint8Array, prefixLength: number): boolean {
  if (address.length !== network.length) return false;
  const wholeBytes = Math.floor(prefixLength / 8);
  for (let index = 0; index < wholeBytes; index++) {
    if (address[index] !== network[index]) return false;
  }
  const remainingBits = prefixLength % 8;
  if (remainingBits === 0) return true;
  const mask = (0xff << (8 - remainingBits)) & 0xff;
  return ((address[wholeBytes] as number) & mask) === ((network[wholeBytes] as number) & mask);
}
