import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { decodeBase64Payload, maxBase64Length } from '../../src/inputs/decode-data-url.js';

const PATH = 'input.messages[0].content[1].image';
const LIMIT = 20 * 1024 * 1024;

function rejection(base64: string, maxBytes = LIMIT): string {
  try {
    decodeBase64Payload(base64, PATH, maxBytes);
  } catch (error) {
    assert.ok(error instanceof GatewayError);
    assert.equal(error.code, 'InvalidImage');
    assert.ok(error.message.startsWith(`${PATH}: `), error.message);
    return error.message;
  }
  assert.fail(`accepted ${JSON.stringify(base64.slice(0, 40))}`);
}

describe('decodeBase64Payload', () => {
  it('decodes standard padded base64 of every length remainder exactly', () => {
    for (let length = 1; length <= 64; length++) {
      const bytes = randomBytes(length);
      assert.deepEqual(decodeBase64Payload(bytes.toString('base64'), PATH, LIMIT), bytes);
    }
  });

  it('refuses characters outside the base64 alphabet, wherever they are', () => {
    const cases = [
      'QUJD REVG', // space
      'QUJD\nREVG', // line break
      'QUJDREV\t', // tab
      'QUJDRE.G',
      'QUJDRE*G',
      'QUJDRE\0G',
      'QUJDREV-', // URL-safe alphabet
      'QUJDREV_',
      'QUJ\u0144', // U+0144 would be read as its low byte, 'D', by a lenient decoder
      'QUJ\u00c4',
      'QUJD😀==',
    ];
    for (const base64 of cases) {
      assert.match(
        rejection(base64),
        /outside the base64 alphabet|non-ASCII|multiple of 4/,
        JSON.stringify(base64),
      );
    }
  });

  it('refuses missing, extra and misplaced padding', () => {
    assert.match(rejection('QUI'), /not a multiple of 4/);
    assert.match(rejection('QQ'), /not a multiple of 4/);
    assert.match(rejection('QQ==='), /not a multiple of 4/);
    assert.match(rejection('Q==='), /padding \(=\) inside the data/);
    assert.match(rejection('QQ==QUJD'), /padding \(=\) inside the data/);
    assert.match(rejection('=QUJ'), /padding \(=\) inside the data/);
    assert.match(rejection(''), /is empty/);
  });

  it('refuses non-zero bits in the padding (non-canonical encodings)', () => {
    assert.deepEqual(decodeBase64Payload('QQ==', PATH, LIMIT), Buffer.from('A'));
    assert.match(rejection('QR=='), /non-zero bits/);
    assert.deepEqual(decodeBase64Payload('QUI=', PATH, LIMIT), Buffer.from('AB'));
    assert.match(rejection('QUJ='), /non-zero bits/);
  });

  it('refuses an over-long payload from its length alone, before looking at any character', () => {
    const tooLong = '!'.repeat(maxBase64Length(LIMIT) + 1);
    assert.match(rejection(tooLong), /larger than 20 MB \(20971520 bytes\): the base64 data is/);
  });

  it('accepts exactly the limit and refuses one byte more', () => {
    const maxBytes = 3000;
    const atLimit = randomBytes(maxBytes).toString('base64');
    assert.equal(decodeBase64Payload(atLimit, PATH, maxBytes).length, maxBytes);
    // 3001 bytes take 4004 characters, more than the 4000 that 3000 bytes can need.
    assert.match(rejection(randomBytes(maxBytes + 1).toString('base64'), maxBytes), /larger than/);
    assert.equal(maxBase64Length(LIMIT), 27_962_028);
  });
});
