import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  CERTIFICATE_VALIDITY_SECONDS,
  MAX_UPLOAD_BYTES,
  UPLOAD_RETENTION_SECONDS,
  UploadPolicySigner,
} from '../../src/storage/upload-policy.js';

const KEY = new Uint8Array(32).fill(9);
const T0 = Date.UTC(2030, 0, 15, 10, 30, 0);
const CAPACITY = { bytes: 3 * MAX_UPLOAD_BYTES, files: 3 };

function signerAt(clock: { now: number }, key = KEY) {
  return new UploadPolicySigner({ signingKey: key, now: () => clock.now });
}

describe('UploadPolicySigner', () => {
  test('a certificate is an OSS policy for a fresh upload_dir, signed, valid one hour', () => {
    const signer = signerAt({ now: T0 });
    const first = signer.issue('token-1', CAPACITY);
    const second = signer.issue('token-1', CAPACITY);
    assert.notEqual(first.uploadDir, second.uploadDir, 'each certificate has its own directory');
    assert.equal(first.expiresInSeconds, CERTIFICATE_VALIDITY_SECONDS);
    const keepUntil = T0 / 1000 + CERTIFICATE_VALIDITY_SECONDS + UPLOAD_RETENTION_SECONDS;
    assert.match(
      first.uploadDir,
      new RegExp(`^uploads/${keepUntil}\\.[0-9a-f]{32}\\.[0-9a-f]{32}$`),
    );
    assert.deepEqual(JSON.parse(Buffer.from(first.policy, 'base64').toString()), {
      expiration: new Date(T0 + CERTIFICATE_VALIDITY_SECONDS * 1000).toISOString(),
      conditions: [
        ['content-length-range', 0, MAX_UPLOAD_BYTES],
        ['starts-with', '$key', `${first.uploadDir}/`],
        { 'x-oss-object-acl': 'private' },
        { 'x-oss-forbid-overwrite': 'true' },
      ],
      imagegate: { token: 'token-1', capacity_bytes: 3 * MAX_UPLOAD_BYTES, capacity_files: 3 },
    });
    assert.deepEqual(signer.checkPolicy(first.policy, first.signature), {
      ok: true,
      uploadDir: first.uploadDir,
      owner: 'token-1',
      capacity: CAPACITY,
      expiresAt: T0 + CERTIFICATE_VALIDITY_SECONDS * 1000,
    });
  });

  test("a certificate smaller than a file says so in its policy's content-length-range", () => {
    const small = signerAt({ now: T0 }).issue('token-1', { bytes: 1024 * 1024, files: 1 });
    const document = JSON.parse(Buffer.from(small.policy, 'base64').toString()) as {
      conditions: unknown[];
    };
    assert.deepEqual(document.conditions[0], ['content-length-range', 0, 1024 * 1024]);
  });

  test("a policy without the gateway's part (token and capacity) is not one it issues", () => {
    const signer = signerAt({ now: T0 });
    const { policy } = signer.issue('token-1', CAPACITY);
    const document = JSON.parse(Buffer.from(policy, 'base64').toString()) as object;
    const bare = Buffer.from(
      JSON.stringify(Object.assign({}, document, { imagegate: undefined })),
    ).toString('base64');
    // Signed by this gateway's key, as a certificate of an older version would be.
    const signature = createHmac('sha256', KEY).update(`policy\n${bare}`).digest('base64url');
    const check = signer.checkPolicy(bare, signature);
    assert.equal(check.ok ? 'ok' : check.reason, 'malformed');
  });

  test('a policy is refused when altered, signed with another key, swapped or expired', () => {
    const clock = { now: T0 };
    const signer = signerAt(clock);
    const { policy, signature } = signer.issue('token-1', CAPACITY);
    const other = signer.issue('token-1', CAPACITY);
    const altered = Buffer.from(
      Buffer.from(policy, 'base64').toString().replace('"private"', '"public-read"'),
    ).toString('base64');
    for (const [name, check] of [
      ['altered policy', signer.checkPolicy(altered, signature)],
      ['another certificate signature', signer.checkPolicy(policy, other.signature)],
      ['another key', signerAt(clock, new Uint8Array(32).fill(1)).checkPolicy(policy, signature)],
      ['short signature', signer.checkPolicy(policy, 'abc')],
    ] as const)
      assert.equal(check.ok ? 'ok' : check.reason, 'bad-signature', name);

    clock.now = T0 + CERTIFICATE_VALIDITY_SECONDS * 1000;
    const late = signer.checkPolicy(policy, signature);
    assert.equal(late.ok ? 'ok' : late.reason, 'expired');
  });

  test('a key binds its token: the same key read for another token is refused', () => {
    const signer = signerAt({ now: T0 });
    const { uploadDir } = signer.issue('token-1', CAPACITY);
    const mine = signer.readKey(`${uploadDir}/a cat.png`, 'token-1');
    assert.ok(mine.ok);
    assert.equal(mine.upload.keepUntil, Number(uploadDir.split('/')[1]?.split('.')[0]));
    assert.match(mine.upload.objectName, /^[A-Za-z0-9_-]{43}$/);
    const dog = signer.readKey(`${uploadDir}/a dog.png`, 'token-1');
    assert.ok(dog.ok);
    assert.notEqual(mine.upload.objectName, dog.upload.objectName);
    assert.deepEqual(signer.readKey(`${uploadDir}/a cat.png`, 'token-2'), {
      ok: false,
      problem: 'no upload of this token has this key',
    });
    // Without an owner (the upload route), only the form is read.
    assert.ok(signer.readKey(`${uploadDir}/a cat.png`).ok);
  });

  test('keys that are not of an upload, or whose file name is unusable, are refused', () => {
    const signer = signerAt({ now: T0 });
    const { uploadDir } = signer.issue('token-1', CAPACITY);
    for (const key of [
      'x.png',
      `${uploadDir}/`,
      `${uploadDir}/${'n'.repeat(256)}`,
      `${uploadDir}/bad\nname.png`,
      `${uploadDir}/sub/x.png`,
      'uploads/12.zz.zz/x.png',
      'dashscope-instant/abc/2026-01-10/x.png',
    ])
      assert.equal(signer.readKey(key, 'token-1').ok, false, JSON.stringify(key));
  });
});
