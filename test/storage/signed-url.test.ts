import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  expiryFolderOf,
  folderExpiredAt,
  newImageId,
  objectKeyOf,
} from '../../src/storage/object-keys.js';
import { IMAGE_URL_VALIDITY_SECONDS, ImageUrlSigner } from '../../src/storage/signed-url.js';

const KEY = new Uint8Array(32).fill(7);

/** A fresh id with the expiry a URL issued now gets, as the result store signs its images. */
function issue(signer: ImageUrlSigner): { id: string; expiresAt: number } {
  return { id: newImageId(), expiresAt: signer.expiresAtFromNow() };
}
const T0 = Date.UTC(2030, 0, 15, 10, 30, 0);

function signerAt(clock: { now: number }, key = KEY) {
  return new ImageUrlSigner({
    signingKey: key,
    publicBaseUrl: 'https://img.example.com/',
    now: () => clock.now,
  });
}

function parts(url: string) {
  const parsed = new URL(url);
  return {
    file: parsed.pathname.split('/').pop() ?? '',
    expires: parsed.searchParams.get('expires') ?? undefined,
    signature: parsed.searchParams.get('signature') ?? undefined,
    parsed,
  };
}

describe('image ids', () => {
  it('are 144 random bits in 24 base64url characters, never repeated', () => {
    const ids = new Set(Array.from({ length: 10_000 }, newImageId));
    assert.equal(ids.size, 10_000);
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{24}$/);
  });
});

describe('ImageUrlSigner', () => {
  it('issues <base>/images/<id>.png?expires=<now+24h>&signature=<HMAC-SHA256 of id and expiry>', () => {
    const signer = signerAt({ now: T0 });
    const image = issue(signer);
    assert.equal(image.expiresAt, T0 / 1000 + IMAGE_URL_VALIDITY_SECONDS);
    const url = signer.urlOf(image);
    const { parsed, expires, signature } = parts(url);
    assert.equal(parsed.origin, 'https://img.example.com');
    assert.equal(parsed.pathname, `/images/${image.id}.png`);
    assert.equal(expires, String(image.expiresAt));
    const expected = createHmac('sha256', KEY)
      .update(`${image.id}\n${image.expiresAt}`)
      .digest('base64url');
    assert.equal(signature, expected);
  });

  it('accepts its own URL until the second it expires, then refuses it as expired', () => {
    const clock = { now: T0 };
    const signer = signerAt(clock);
    const image = issue(signer);
    const { file, expires, signature } = parts(signer.urlOf(image));
    assert.deepEqual(signer.check(file, expires, signature), {
      ok: true,
      image,
      secondsLeft: IMAGE_URL_VALIDITY_SECONDS,
    });
    clock.now = T0 + (IMAGE_URL_VALIDITY_SECONDS - 1) * 1000 + 999;
    const last = signer.check(file, expires, signature);
    assert.ok(last.ok);
    assert.equal(last.secondsLeft, 1);
    clock.now = T0 + IMAGE_URL_VALIDITY_SECONDS * 1000;
    const expired = signer.check(file, expires, signature);
    assert.equal(expired.ok, false);
    assert.equal(!expired.ok && expired.problem, 'expired');
  });

  it('refuses any change to id, expiry or signature, and URLs signed with another key', () => {
    const signer = signerAt({ now: T0 });
    const { file, expires = '', signature = '' } = parts(signer.urlOf(issue(signer)));
    const otherId = `${newImageId()}.png`;
    const flip = (text: string, at: number) =>
      text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
    const cases: [string, unknown, unknown][] = [
      [otherId, expires, signature],
      [file, String(Number(expires) + 3600), signature],
      [file, String(Number(expires) - 1), signature],
      [file, expires, flip(signature, 0)],
      [file, expires, flip(signature, 42)],
      [file, expires, signature.slice(0, -1)],
      [file, expires, `${signature}A`],
      [file, expires, Buffer.from(signature, 'base64url').toString('base64')],
      [file, expires, undefined],
      [file, expires, [signature, signature]],
    ];
    for (const [caseFile, caseExpires, caseSignature] of cases) {
      const checked = signer.check(caseFile, caseExpires, caseSignature);
      assert.equal(
        checked.ok,
        false,
        `${caseFile} ${String(caseExpires)} ${String(caseSignature)}`,
      );
      assert.equal(!checked.ok && checked.problem, 'bad-signature');
    }
    const stranger = signerAt({ now: T0 }, new Uint8Array(32).fill(8));
    const checked = stranger.check(file, expires, signature);
    assert.equal(!checked.ok && checked.problem, 'bad-signature');
  });

  it('calls malformed what is not an image name or lacks a numeric expiry', () => {
    const signer = signerAt({ now: T0 });
    const { file, expires, signature } = parts(signer.urlOf(issue(signer)));
    const cases: [string, unknown][] = [
      [file.replace('.png', '.jpg'), expires],
      [file.slice(9), expires],
      [`${'a'.repeat(65)}.png`, expires],
      [`${file.slice(0, 5)}!${file.slice(6)}`, expires],
      [`../${file}`, expires],
      ['..%2F..%2Fsecret.png', expires],
      [file, undefined],
      [file, ''],
      [file, '0123'],
      [file, '-5'],
      [file, '1e10'],
      [file, [expires, expires]],
    ];
    for (const [caseFile, caseExpires] of cases) {
      const checked = signer.check(caseFile, caseExpires, signature);
      assert.equal(
        !checked.ok && checked.problem,
        'malformed',
        `${caseFile} ${String(caseExpires)}`,
      );
    }
  });

  it('refuses a signing key shorter than 16 bytes', () => {
    assert.throws(() => signerAt({ now: T0 }, new Uint8Array(8)), RangeError);
  });
});

describe('ImageUrlSigner.checkUrl: is a whole URL one of ours', () => {
  it('checks our URLs and says any other is not ours', () => {
    const clock = { now: T0 };
    const signer = signerAt(clock);
    const url = signer.urlOf(issue(signer));
    const checked = signer.checkUrl(url);
    assert.ok(checked?.ok);
    assert.equal(signer.checkUrl('https://elsewhere.example.com/images/x.png'), undefined);
    assert.equal(signer.checkUrl('https://img.example.com/other/x.png'), undefined);
    const tampered = signer.checkUrl(url.replace(/expires=[0-9]+/, 'expires=9999999999'));
    assert.equal(tampered?.ok === false && tampered.problem, 'bad-signature');
    const nested = signer.checkUrl('https://img.example.com/images/a/../x.png');
    assert.equal(nested?.ok, false);
    clock.now = T0 + (IMAGE_URL_VALIDITY_SECONDS + 1) * 1000;
    const expired = signer.checkUrl(url);
    assert.equal(expired?.ok === false && expired.problem, 'expired');
  });

  it('checks the same URL under another of our origins, and no origin it was not told of', () => {
    const signer = new ImageUrlSigner({
      signingKey: KEY,
      publicBaseUrl: 'http://127.0.0.1:8080',
      isOtherOrigin: (origin) => origin === 'http://localhost:8080',
      now: () => T0,
    });
    const url = signer.urlOf(issue(signer));
    const other = url.replace('http://127.0.0.1:8080', 'http://localhost:8080');
    assert.ok(signer.checkUrl(other)?.ok);
    const tampered = signer.checkUrl(other.replace(/expires=[0-9]+/, 'expires=9999999999'));
    assert.equal(tampered?.ok === false && tampered.problem, 'bad-signature');
    for (const elsewhere of [
      url.replace('http://127.0.0.1:8080', 'http://evil.example.com'),
      url.replace('http://127.0.0.1:8080', 'http://localhost:8081'),
      url.replace('http://127.0.0.1:8080', 'https://localhost:8080'),
      url.replace('http://127.0.0.1:8080', 'http://localhost:8080/gw'),
      'not a URL',
    ])
      assert.equal(signer.checkUrl(elsewhere), undefined, elsewhere);
  });
});

describe('object keys by expiry hour', () => {
  it('puts an image in the folder of the UTC hour it expires in', () => {
    const expiresAt = Date.UTC(2030, 0, 16, 10, 30, 0) / 1000;
    assert.equal(expiryFolderOf(expiresAt), '2030-01-16T10');
    assert.equal(objectKeyOf('abc', expiresAt), '2030-01-16T10/abc.png');
  });

  it('says a folder is expired at the end of its hour, and knows no foreign folder', () => {
    assert.equal(folderExpiredAt('2030-01-16T10'), Date.UTC(2030, 0, 16, 11) / 1000);
    assert.equal(folderExpiredAt('uploads-2030-01-16T10'), Date.UTC(2030, 0, 16, 11) / 1000);
    for (const foreign of [
      '2030-02-30T10',
      '2030-01-16T24',
      'backup',
      '2030-01-16',
      '2030-01-16T10x',
      'uploads-2030-02-30T10',
      'uploads-',
      'downloads-2030-01-16T10',
    ])
      assert.equal(folderExpiredAt(foreign), undefined, foreign);
  });
});
