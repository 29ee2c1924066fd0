import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import type { TokenLimitChanges } from '../../src/domain/token-limits.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import { makeBmp } from '../inputs/image-fixtures.js';
import { BACKENDS } from '../helpers/database-backends.js';
import type { RawAnswer } from '../helpers/raw-http.js';
import { GENERATION_URL, modelBBody } from '../helpers/requests.js';
import { getPolicy, type UploadCertificate, uploadFile } from '../helpers/sdk-uploads.js';
import { startTestGateway } from '../helpers/test-gateway.js';

const PREFIX = '/vendor';
const MIB = 1024 * 1024;
/** 2700 x 2580 pixels of 24-bit BMP: 20,898,054 bytes, just under the 20 MiB a file may have. */
const LARGE = makeBmp(2700, 2580);
/** 400 x 400 pixels: 480,054 bytes, two of which fit in 1 MiB and three do not. */
const SMALL = makeBmp(400, 400);

async function gatewayOn(
  t: TestContext,
  env: Record<string, string> = {},
  target?: DatabaseTarget,
) {
  const gateway = await startTestGateway({
    env,
    ...(target === undefined ? {} : { database: target }),
  });
  t.after(() => gateway.close());
  const port = Number(new URL(await gateway.listen()).port);
  return {
    gateway,
    port,
    token: async (limits: TokenLimitChanges = {}) => {
      const { token, record } = await gateway.services.tokenIssuer.issue({
        name: 'uploads',
        account: 'upload-co',
        admin: false,
        expiresInSeconds: undefined,
      });
      await gateway.admission.limits.update(record.id, limits);
      return { id: record.id, authorization: `Bearer ${token}` };
    },
  };
}

function certificateOf(answer: RawAnswer): UploadCertificate {
  assert.equal(answer.status, 200, answer.body);
  return (JSON.parse(answer.body) as { data: UploadCertificate }).data;
}

function codeOf(answer: RawAnswer): string {
  return answer.status === 200
    ? '200'
    : `${answer.status} ${(JSON.parse(answer.body) as { code: string }).code}`;
}

function tally(answers: readonly RawAnswer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const answer of answers) counts[codeOf(answer)] = (counts[codeOf(answer)] ?? 0) + 1;
  return counts;
}

describe('uploads are bounded per certificate and per token', () => {
  it('one certificate carries its capacity_limit_mb and no more: 40 files of 20 MB, 9 stored', async (t) => {
    const { port, token } = await gatewayOn(t);
    const hostile = await token({ imageQuota: 1, requestsPerMinute: 1, maxConcurrent: 1 });
    const certificate = certificateOf(
      await getPolicy(port, PREFIX, MODEL_A, hostile.authorization),
    );
    // The inputs of one request of model A: 9 images of at most 20 MiB.
    assert.equal(certificate.capacity_limit_mb, 180);
    assert.equal(certificate.max_file_size_mb, 20);

    const answers: RawAnswer[] = [];
    let storedBytes = 0;
    for (let index = 0; index < 40; index++) {
      const answer = await uploadFile(certificate, `big-${index}.bmp`, LARGE);
      answers.push(answer);
      if (answer.status === 200) storedBytes += LARGE.length;
    }
    t.diagnostic(
      `stored ${storedBytes} bytes in ${answers.filter((a) => a.status === 200).length} files`,
    );
    assert.deepEqual(tally(answers), { '200': 9, '429 Throttling.AllocationQuota': 31 });
    assert.ok(storedBytes <= certificate.capacity_limit_mb * MIB);
    const refused = answers.find((answer) => answer.status === 429);
    assert.match(
      (JSON.parse(refused?.body ?? '{}') as { message: string }).message,
      /^file: this upload certificate carries at most 180 MiB in 9 files \(capacity_limit_mb\); ask for a new certificate$/,
    );
  });

  it("a certificate counts against the token's rate, and is refused a model the token may not use", async (t) => {
    const { port, token } = await gatewayOn(t);
    const limited = await token({ requestsPerMinute: 1, allowedModels: [MODEL_B] });
    const forbidden = await getPolicy(port, PREFIX, MODEL_A, limited.authorization);
    assert.equal(codeOf(forbidden), '401 InvalidApiKey');
    assert.match(forbidden.body, /this token may not use model gen-2\.7-image-pro/);

    const first = await getPolicy(port, PREFIX, MODEL_B, limited.authorization);
    assert.equal(certificateOf(first).capacity_limit_mb, 60);
    assert.equal(first.headers['ratelimit-limit'], '1');
    const second = await getPolicy(port, PREFIX, MODEL_B, limited.authorization);
    assert.equal(codeOf(second), '429 Throttling.RateQuota');
    assert.ok(Number(second.headers['retry-after']) >= 1);
    // The generation after it shares the same rate.
    const generation = await fetch(`http://127.0.0.1:${port}${GENERATION_URL}`, {
      method: 'POST',
      headers: { authorization: limited.authorization, 'content-type': 'application/json' },
      body: JSON.stringify(modelBBody({ n: 1 })),
    });
    assert.equal(generation.status, 429);
  });

  it("a token's uploads are bounded per window, across its certificates, with Retry-After", async (t) => {
    const { port, token } = await gatewayOn(t, {
      IMAGEGATE_UPLOAD_MB_PER_TOKEN: '1',
      IMAGEGATE_UPLOAD_FILES_PER_TOKEN: '100',
    });
    const caller = await token();
    const certificate = async () =>
      certificateOf(await getPolicy(port, PREFIX, MODEL_A, caller.authorization));
    assert.equal((await certificate()).capacity_limit_mb, 1);
    const answers: RawAnswer[] = [];
    for (let index = 0; index < 3; index++)
      answers.push(await uploadFile(await certificate(), `small-${index}.bmp`, SMALL));
    assert.deepEqual(tally(answers), { '200': 2, '429 Throttling.RateQuota': 1 });
    const refused = answers[2] as RawAnswer;
    assert.match(refused.body, /this token may upload 1 MiB in 100 files per 24 hours/);
    assert.ok(Number(refused.headers['retry-after']) >= 1);

    // A token's own limits override the settings: here, two files per window, whatever their size.
    const own = await token({ uploadMbPerWindow: 100, uploadFilesPerWindow: 2 });
    const ownCertificate = async () =>
      certificateOf(await getPolicy(port, PREFIX, MODEL_B, own.authorization));
    const first = await ownCertificate();
    assert.equal(first.capacity_limit_mb, 60);
    const ownAnswers = [await uploadFile(first, 'own-0.bmp', SMALL)];
    for (let index = 1; index < 3; index++)
      ownAnswers.push(await uploadFile(await ownCertificate(), `own-${index}.bmp`, SMALL));
    assert.deepEqual(tally(ownAnswers), { '200': 2, '429 Throttling.RateQuota': 1 });
  });

  it('a certificate stops working when its token is revoked', async (t) => {
    const { gateway, port, token } = await gatewayOn(t);
    const caller = await token();
    const certificate = certificateOf(await getPolicy(port, PREFIX, MODEL_B, caller.authorization));
    assert.equal((await uploadFile(certificate, 'before.bmp', SMALL)).status, 200);
    await gateway.services.tokenStore.revoke(caller.id, Date.now());
    const after = await uploadFile(certificate, 'after.bmp', SMALL);
    assert.equal(codeOf(after), '401 InvalidApiKey');
    assert.match(
      after.body,
      /policy: the token this certificate was issued to can no longer upload \(token has been revoked\)/,
    );
  });
});

for (const [backend, targetFor] of BACKENDS) {
  it(`uploads at once never pass a token's window (${backend})`, async (t) => {
    const target = await targetFor(t);
    if (target === undefined) return;
    const { port, token } = await gatewayOn(t, { IMAGEGATE_UPLOAD_MB_PER_TOKEN: '1' }, target);
    const caller = await token();
    const certificates = await Promise.all(
      Array.from({ length: 12 }, async () =>
        certificateOf(await getPolicy(port, PREFIX, MODEL_B, caller.authorization)),
      ),
    );
    const answers = await Promise.all(
      certificates.map((certificate, index) =>
        uploadFile(certificate, `at-once-${index}.bmp`, SMALL),
      ),
    );
    assert.deepEqual(tally(answers), { '200': 2, '429 Throttling.RateQuota': 10 });
  });
}
