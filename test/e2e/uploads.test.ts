import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { CERTIFICATE_VALIDITY_SECONDS } from '../../src/storage/upload-policy.js';
import { startFakeS3 } from '../fixtures/s3-server.js';
import { rawExchange } from '../helpers/raw-http.js';
import { GENERATION_URL, modelABody, modelBBody } from '../helpers/requests.js';
import {
  encodeForm,
  getPolicy,
  postForm,
  sdkFormFields,
  type UploadCertificate,
  uploadFile,
} from '../helpers/sdk-uploads.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { testImage } from './e2e-helpers.js';

const PREFIX = '/vendor';
const HOUR_MS = 60 * 60 * 1000;
const IMAGE_PATH = 'input.messages[0].content[0].image';

interface Running {
  gateway: TestGateway;
  port: number;
  authorization: string;
  clock: { now: number };
}

async function start(env: Record<string, string> = {}): Promise<Running> {
  const clock = { now: Date.UTC(2026, 0, 10, 12, 0, 0) };
  const gateway = await startTestGateway({ env, now: () => clock.now });
  const port = Number(new URL(await gateway.listen()).port);
  return { gateway, port, authorization: await gateway.bearer(), clock };
}

async function certificateFor(running: Running, authorization = running.authorization) {
  const answer = await getPolicy(running.port, PREFIX, MODEL_B, authorization);
  assert.equal(answer.status, 200, answer.body);
  const body = JSON.parse(answer.body) as { data: UploadCertificate; request_id: string };
  return body.data;
}

/** The generation MultiModalConversation.call sends once its files are uploaded. */
async function editWith(
  running: Running,
  image: string,
  options: { resolveHeader?: boolean; authorization?: string } = {},
) {
  const response = await fetch(`http://127.0.0.1:${running.port}${GENERATION_URL}`, {
    method: 'POST',
    headers: {
      authorization: options.authorization ?? running.authorization,
      'content-type': 'application/json',
      ...(options.resolveHeader === false ? {} : { 'X-DashScope-OssResourceResolve': 'enable' }),
    },
    body: JSON.stringify(modelBBody({ n: 1 }, [{ image }, { text: 'make it autumn' }])),
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      code?: string;
      message?: string;
      output?: { choices: { message: { content: { image: string }[] } }[] };
    },
  };
}

function errorOf(answer: { status: number; body: string }): { code: string; message: string } {
  return JSON.parse(answer.body) as { code: string; message: string };
}

const PNG = await testImage(320, 256, 0, 'png');

for (const storage of ['disk', 's3'] as const) {
  describe(`uploads through the SDK's protocol, ${storage} storage`, () => {
    let running: Running;
    let closeS3 = async () => {};
    before(async () => {
      if (storage === 'disk') running = await start();
      else {
        const s3 = await startFakeS3({ buckets: ['uploads-test'] });
        closeS3 = () => s3.close();
        running = await start({
          IMAGEGATE_STORAGE: 's3',
          IMAGEGATE_S3_BUCKET: 'uploads-test',
          IMAGEGATE_S3_ENDPOINT: s3.endpoint,
          IMAGEGATE_S3_REGION: 'us-east-1',
          IMAGEGATE_S3_ACCESS_KEY_ID: 'test-access-key',
          IMAGEGATE_S3_SECRET_ACCESS_KEY: 'test-secret-key',
          IMAGEGATE_S3_FORCE_PATH_STYLE: 'true',
        });
      }
    });
    after(async () => {
      await running.gateway.close();
      await closeS3();
    });

    test('getPolicy, the form upload and an oss:// edit, as the SDK sends them', async () => {
      const answer = await getPolicy(running.port, PREFIX, MODEL_B, running.authorization);
      assert.equal(answer.status, 200, answer.body);
      const body = JSON.parse(answer.body) as { data: UploadCertificate; request_id: string };
      assert.equal(body.request_id, answer.headers['x-request-id']);
      const certificate = body.data;
      assert.equal(
        certificate.upload_host,
        `http://127.0.0.1:${running.port}${PREFIX}/api/v1/uploads`,
      );
      assert.match(certificate.upload_dir, /^uploads\/[0-9]+\.[0-9a-f]{32}\.[0-9a-f]{32}$/);
      assert.equal(certificate.expire_in_seconds, CERTIFICATE_VALIDITY_SECONDS);
      assert.equal(certificate.max_file_size_mb, 20);
      assert.equal(certificate.oss_access_key_id, 'imagegate');
      assert.equal(certificate.x_oss_object_acl, 'private');
      assert.equal(certificate.x_oss_forbid_overwrite, 'true');
      assert.equal(typeof certificate.capacity_limit_mb, 'number');
      const policy = JSON.parse(Buffer.from(certificate.policy, 'base64').toString()) as {
        conditions: unknown[];
      };
      assert.deepEqual(policy.conditions[1], ['starts-with', '$key', `${certificate.upload_dir}/`]);

      const uploaded = await uploadFile(certificate, 'cat photo.png', PNG);
      assert.equal(uploaded.status, 200, uploaded.body);
      // The SDK reuses one certificate for every file of a message.
      const second = await uploadFile(certificate, 'dog.png', await testImage(256, 256, 40, 'png'));
      assert.equal(second.status, 200, second.body);

      const edited = await editWith(running, `oss://${certificate.upload_dir}/cat photo.png`);
      assert.equal(edited.status, 200, JSON.stringify(edited.body));
      const [choice] = edited.body.output?.choices ?? [];
      assert.equal(choice?.message.content.length, 1);
    });

    test('uploads are swept once 48 hours have passed, not before', async () => {
      const certificate = await certificateFor(running);
      assert.equal((await uploadFile(certificate, 'kept.png', PNG)).status, 200);
      const key = `oss://${certificate.upload_dir}/kept.png`;
      const started = running.clock.now;
      try {
        running.clock.now = started + 48 * HOUR_MS;
        await running.gateway.storage.sweeper.sweepOnce();
        assert.equal((await editWith(running, key)).status, 200);

        running.clock.now = started + 50 * HOUR_MS;
        const sweep = await running.gateway.storage.sweeper.sweepOnce();
        assert.ok(sweep.objectsDeleted >= 1, JSON.stringify(sweep));
        const folders = await running.gateway.storage.blobs.listFolders();
        assert.ok(!folders.some((folder) => folder.startsWith('uploads-')), folders.join());
        const expired = await editWith(running, key);
        assert.equal(expired.status, 400);
        assert.equal(expired.body.code, 'InvalidURL');
        assert.match(expired.body.message ?? '', /content\[0\]\.image: the upload expired at/);
      } finally {
        running.clock.now = started;
      }
    });
  });
}

describe('uploads: every refusal', () => {
  let running: Running;
  let certificate: UploadCertificate;
  before(async () => {
    running = await start();
    certificate = await certificateFor(running);
  });
  after(() => running.gateway.close());

  const upload = (parts: Parameters<typeof encodeForm>[0]) =>
    postForm(certificate.upload_host, encodeForm(parts));
  const withFile = (fields: ReturnType<typeof sdkFormFields>, bytes = PNG) => [
    ...fields,
    { name: 'file', value: bytes, filename: 'x.png' },
  ];
  const replaced = (name: string, value: string) =>
    sdkFormFields(certificate, 'x.png').map((field) =>
      field.name === name ? { ...field, value } : field,
    );

  test('getPolicy needs a token, action=getPolicy and a known model or alias', async () => {
    const anonymous = await getPolicy(running.port, PREFIX, MODEL_B, undefined);
    assert.equal(anonymous.status, 401);
    assert.equal(errorOf(anonymous).code, 'InvalidApiKey');
    const unknownModel = await getPolicy(
      running.port,
      PREFIX,
      'no-such-model',
      running.authorization,
    );
    assert.equal(unknownModel.status, 400);
    assert.match(errorOf(unknownModel).message, /^model: must be one of/);
    const byUpstreamName = await getPolicy(
      running.port,
      PREFIX,
      'wan2.7-image-pro',
      running.authorization,
    );
    assert.equal(byUpstreamName.status, 200, 'the SDK asks with the model name it was given');
    const wrongAction = await fetch(`${certificate.upload_host}?action=list&model=${MODEL_A}`, {
      headers: { authorization: running.authorization },
    });
    assert.equal(wrongAction.status, 400);
    assert.match(
      ((await wrongAction.json()) as { message: string }).message,
      /^action: must be getPolicy/,
    );
  });

  test('a tampered signature or policy is refused with 401', async () => {
    const badSignature = await upload(withFile(replaced('Signature', 'A'.repeat(43))));
    assert.equal(badSignature.status, 401);
    assert.match(errorOf(badSignature).message, /^Signature: /);
    const other = await certificateFor(running);
    const swappedPolicy = await upload(withFile(replaced('policy', other.policy)));
    assert.equal(swappedPolicy.status, 401);
    const wrongKeyId = await upload(withFile(replaced('OSSAccessKeyId', 'LTAI-something')));
    assert.equal(wrongKeyId.status, 401);
    assert.match(errorOf(wrongKeyId).message, /^OSSAccessKeyId: /);
  });

  test('an expired certificate is refused with 401', async () => {
    const started = running.clock.now;
    try {
      running.clock.now = started + (CERTIFICATE_VALIDITY_SECONDS + 1) * 1000;
      const late = await uploadFile(certificate, 'late.png', PNG);
      assert.equal(late.status, 401);
      assert.match(errorOf(late).message, /expired at/);
    } finally {
      running.clock.now = started;
    }
  });

  test('a key outside upload_dir, or a missing field, is refused naming it', async () => {
    const outside = await upload(withFile(replaced('key', 'uploads/elsewhere/x.png')));
    assert.equal(outside.status, 400);
    assert.match(errorOf(outside).message, /^key: must start with the certificate's upload_dir/);
    const noKey = await upload(
      withFile(sdkFormFields(certificate, 'x.png').filter((field) => field.name !== 'key')),
    );
    assert.equal(noKey.status, 400);
    assert.equal(errorOf(noKey).message, 'key: is required');
    const noFile = await upload(sdkFormFields(certificate, 'x.png'));
    assert.equal(noFile.status, 400);
    assert.match(errorOf(noFile).message, /^file: is required/);
    const fileFirst = await upload([
      { name: 'file', value: PNG, filename: 'x.png' },
      ...sdkFormFields(certificate, 'x.png'),
    ]);
    assert.equal(fileFirst.status, 400);
    assert.equal(errorOf(fileFirst).code, 'InvalidParameter');
  });

  test('a body that is not a multipart form gets 415', async () => {
    const response = await fetch(certificate.upload_host, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(response.status, 415);
    assert.equal(((await response.json()) as { code: string }).code, 'UnsupportedMediaType');
  });

  test('a file over 20 MB is refused with 413, declared or streamed', async () => {
    const huge = Buffer.concat([PNG, Buffer.alloc(20 * 1024 * 1024 + 1 - PNG.length)]);
    const streamed = await uploadFile(certificate, 'huge.png', huge);
    assert.equal(streamed.status, 413);
    assert.equal(errorOf(streamed).code, 'RequestTooLarge');
    // Declared larger than any allowed form: refused from the head alone, the body never sent.
    const url = new URL(certificate.upload_host);
    const declared = await rawExchange(
      running.port,
      [
        `POST ${url.pathname} HTTP/1.1`,
        `Host: ${url.host}`,
        'Content-Type: multipart/form-data; boundary=0123456789abcdef',
        `Content-Length: ${30 * 1024 * 1024}`,
        '',
        '',
      ].join('\r\n'),
    );
    assert.equal(declared.status, 413);
    assert.equal(JSON.parse(declared.body).code, 'RequestTooLarge');
  });

  test('a file that is not an accepted image is refused with 400 InvalidImage', async () => {
    const text = await uploadFile(
      certificate,
      'notes.png',
      Buffer.from('just some text, not a PNG'),
    );
    assert.equal(text.status, 400);
    assert.equal(errorOf(text).code, 'InvalidImage');
    assert.match(errorOf(text).message, /^file: unsupported image format/);
    const tiny = await uploadFile(certificate, 'tiny.png', await testImage(100, 100, 0, 'png'));
    assert.equal(tiny.status, 400);
    assert.match(errorOf(tiny).message, /^file: width 100 is outside/);
  });

  test('an upload never overwrites one already there', async () => {
    assert.equal((await uploadFile(certificate, 'once.png', PNG)).status, 200);
    const again = await uploadFile(certificate, 'once.png', await testImage(256, 256, 90, 'png'));
    assert.equal(again.status, 400);
    assert.match(errorOf(again).message, /^key: a file was already uploaded under this key/);
  });

  test('oss:// resolves for the uploading token only, with the header, for a key that exists', async () => {
    assert.equal((await uploadFile(certificate, 'mine.png', PNG)).status, 200);
    const key = `oss://${certificate.upload_dir}/mine.png`;

    const noHeader = await editWith(running, key, { resolveHeader: false });
    assert.equal(noHeader.status, 400);
    assert.equal(noHeader.body.code, 'InvalidURL');
    assert.equal(
      noHeader.body.message,
      `${IMAGE_PATH}: oss:// keys are resolved only with the header X-DashScope-OssResourceResolve: enable`,
    );

    const otherToken = await editWith(running, key, {
      authorization: await running.gateway.bearer({ name: 'someone-else' }),
    });
    assert.equal(otherToken.status, 400);
    assert.equal(otherToken.body.message, `${IMAGE_PATH}: no upload of this token has this key`);

    const unknown = await editWith(running, `oss://${certificate.upload_dir}/never.png`);
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.message, `${IMAGE_PATH}: nothing was uploaded under this key`);

    const foreign = await editWith(running, 'oss://dashscope-instant/abc/2026-01-10/x.png');
    assert.equal(foreign.status, 400);
    assert.match(
      foreign.body.message ?? '',
      /is not the key of an upload made through this gateway/,
    );

    assert.equal((await editWith(running, key)).status, 200);
  });
});

describe('chained edits: a previous result URL as input', () => {
  let running: Running;
  before(async () => {
    // The address guard stays on: loopback URLs are refused unless they are our own results.
    running = await start();
  });
  after(() => running.gateway.close());

  test('is read from storage after its signature is checked', async () => {
    const first = await fetch(`http://127.0.0.1:${running.port}${GENERATION_URL}`, {
      method: 'POST',
      headers: { authorization: running.authorization, 'content-type': 'application/json' },
      body: JSON.stringify(modelABody({ size: '1K', n: 1 })),
    });
    assert.equal(first.status, 200);
    const body = (await first.json()) as {
      output: { choices: { message: { content: { image: string }[] } }[] };
    };
    const url = body.output.choices[0]?.message.content[0]?.image;
    if (url === undefined) throw new Error('no image URL in the answer');
    assert.ok(url.startsWith(`http://127.0.0.1:${running.port}/images/`), url);

    const chained = await editWith(running, url, { resolveHeader: false });
    assert.equal(chained.status, 200, JSON.stringify(chained.body));

    const tampered = await editWith(
      running,
      url.replace(
        /signature=(.)/,
        (_all, first: string) => `signature=${first === 'A' ? 'B' : 'A'}`,
      ),
      {
        resolveHeader: false,
      },
    );
    assert.equal(tampered.status, 400);
    assert.equal(tampered.body.code, 'InvalidURL');
    assert.match(
      tampered.body.message ?? '',
      /^input\.messages\[0\]\.content\[0\]\.image: image URL signature/,
    );

    const elsewhere = await editWith(running, `http://127.0.0.1:${running.port}/healthz`, {
      resolveHeader: false,
    });
    assert.equal(elsewhere.status, 400, 'any other loopback URL is still refused by the guard');
    assert.equal(elsewhere.body.code, 'InvalidURL');

    const started = running.clock.now;
    try {
      running.clock.now = started + 25 * HOUR_MS;
      const expired = await editWith(running, url, { resolveHeader: false });
      assert.equal(expired.status, 400);
      assert.match(expired.body.message ?? '', /image URL expired at/);
    } finally {
      running.clock.now = started;
    }
  });
});
