import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { encodeForm, type FormPart, signedUploadForm } from '../helpers/sdk-uploads.js';
import {
  startTokenedGatewayProcess,
  type TokenedGatewayProcess,
} from '../helpers/tokened-gateway-process.js';
import { makePng } from '../inputs/image-fixtures.js';
import { sendWholeBodyAnyway } from '../helpers/persistent-sender.js';
import { assertLevelsBackToZero } from '../helpers/level-gauges.js';

const UPLOAD_URL = '/vendor/api/v1/uploads';
/** A request that ends badly is answered or closed within this; past it the test says so. */
const ANSWER_WAIT_MS = 8000;

/** How the bytes after the head go: whole, cut short and then ended or reset, or framed wrongly. */
type Ending =
  | 'whole'
  | 'cut-then-fin'
  | 'cut-then-reset'
  | 'cut-then-silence'
  | 'chunked-whole'
  | 'chunked-cut-then-last-chunk'
  | 'chunked-cut-then-reset'
  | 'chunked-bad-framing';

const ENDINGS: readonly Ending[] = [
  'whole',
  'cut-then-fin',
  'cut-then-reset',
  'cut-then-silence',
  'chunked-whole',
  'chunked-cut-then-last-chunk',
  'chunked-cut-then-reset',
  'chunked-bad-framing',
];

/** What one raw exchange saw: the status line's code, or 0 when the connection ended without. */
interface Seen {
  status: number;
  body: string;
}

/** Whether `text` holds a whole answer: its head and its body, by length or last chunk. */
function isWhole(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = text.slice(0, end);
  if (/^transfer-encoding: *chunked/im.test(head)) return text.endsWith('\r\n0\r\n\r\n');
  const length = /^content-length: *(\d+)/im.exec(head)?.[1];
  return length !== undefined && text.length - end - 4 >= Number(length);
}

function chunkFrame(bytes: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`${bytes.length.toString(16)}\r\n`),
    bytes,
    Buffer.from('\r\n'),
  ]);
}

/**
 * Sends `head` (without its length header) and `body` ending as `ending` says, on a connection of
 * its own, and reads what comes back until the server closes or ANSWER_WAIT_MS pass.
 */
function sendEnding(port: number, head: string, body: Buffer, ending: Ending): Promise<Seen> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(giveUp);
      socket.destroy();
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
      const bodyStart = received.indexOf('\r\n\r\n');
      resolve({
        status: status === undefined ? 0 : Number(status),
        body: bodyStart < 0 ? '' : received.slice(bodyStart + 4),
      });
    };
    const giveUp = setTimeout(settle, ANSWER_WAIT_MS);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (isWhole(received)) settle();
    });
    socket.on('close', settle);
    socket.on('connect', () => {
      const cut = body.subarray(0, Math.max(0, body.length - 30));
      const chunked = ending.startsWith('chunked');
      socket.write(
        `${head}${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`}\r\n\r\n`,
      );
      switch (ending) {
        case 'whole':
          socket.write(body);
          break;
        case 'cut-then-fin':
          socket.end(cut);
          break;
        case 'cut-then-reset':
          socket.write(cut, () => socket.resetAndDestroy());
          break;
        case 'cut-then-silence':
          // The gateway's request time-out ends it.
          socket.write(cut);
          break;
        case 'chunked-whole':
          socket.write(Buffer.concat([chunkFrame(body), Buffer.from('0\r\n\r\n')]));
          break;
        case 'chunked-cut-then-last-chunk':
          socket.write(Buffer.concat([chunkFrame(cut), Buffer.from('0\r\n\r\n')]));
          break;
        case 'chunked-cut-then-reset':
          socket.write(chunkFrame(cut), () => socket.resetAndDestroy());
          break;
        case 'chunked-bad-framing':
          socket.write(Buffer.concat([chunkFrame(cut), Buffer.from('zz\r\nnot a chunk\r\n')]));
          break;
      }
    });
  });
}

/** A route that reads a body: its head (up to the length header) and a body it would accept. */
interface BodyRoute {
  name: string;
  head: (gateway: TokenedGatewayProcess) => string;
  body: (gateway: TokenedGatewayProcess, index: number) => Promise<Buffer>;
}

function headOf(method: string, url: string, headers: Record<string, string>): string {
  const lines = [`${method} ${url} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n`;
}

const JSON_BODY = Buffer.from(JSON.stringify(modelABody({ n: 1, size: '768*768' })));
let pngBytes: Buffer;

/** Multipart bodies carry their boundary in the head: one form per route, made once. */
const forms = new Map<string, { contentType: string; body: Buffer }>();

function formFor(key: string, parts: () => Promise<FormPart[]>) {
  return async () => {
    const known = forms.get(key);
    if (known !== undefined) return known;
    const made = encodeForm(await parts());
    forms.set(key, made);
    return made;
  };
}

const editForm = formFor('edits', async () => [
  { name: 'model', value: MODEL_B },
  { name: 'prompt', value: 'make it autumn' },
  { name: 'image', value: pngBytes, filename: 'in.png' },
]);

/** Upload forms are signed for the gateway's token, and each key takes one upload only. */
function uploadForm(gateway: TokenedGatewayProcess, index: number) {
  return signedUploadForm(
    gateway,
    `file-${index}.png`,
    Buffer.concat([pngBytes, Buffer.alloc(8192)]),
  );
}

function routes(): BodyRoute[] {
  const json =
    (url: string, extra: Record<string, string> = {}): BodyRoute['head'] =>
    (gateway) =>
      headOf('POST', url, {
        Authorization: gateway.authorization,
        'Content-Type': 'application/json',
        ...extra,
      });
  const jsonBody = async () => JSON_BODY;
  return [
    { name: 'generation', head: json(GENERATION_URL), body: jsonBody },
    {
      name: 'generation with a bad token',
      head: json(GENERATION_URL, { Authorization: 'Bearer not-a-token' }),
      body: jsonBody,
    },
    {
      name: 'generation as SSE',
      head: json(GENERATION_URL, { 'X-DashScope-SSE': 'enable' }),
      body: jsonBody,
    },
    {
      name: 'task submission',
      head: json(GENERATION_URL, { 'X-DashScope-Async': 'enable' }),
      body: jsonBody,
    },
    {
      name: 'OpenAI generations',
      head: json('/v1/images/generations'),
      body: async () =>
        Buffer.from(JSON.stringify({ model: MODEL_A, prompt: 'a fox', size: '768x768' })),
    },
    {
      name: 'OpenAI edits',
      head: (gateway) =>
        headOf('POST', '/v1/images/edits', {
          Authorization: gateway.authorization,
          'Content-Type': forms.get('edits')?.contentType ?? '',
        }),
      body: async () => (await editForm()).body,
    },
    { name: 'OpenAI edits with a JSON body', head: json('/v1/images/edits'), body: jsonBody },
    {
      name: 'upload with a JSON body',
      head: () => headOf('POST', UPLOAD_URL, { 'Content-Type': 'application/json' }),
      body: jsonBody,
    },
    {
      name: 'task cancel',
      head: json('/vendor/api/v1/tasks/no-such-task/cancel'),
      body: jsonBody,
    },
    { name: 'unrouted', head: json('/vendor/no/such/route'), body: jsonBody },
    {
      name: 'generation with another method',
      head: (gateway) =>
        headOf('PUT', GENERATION_URL, {
          Authorization: gateway.authorization,
          'Content-Type': 'application/json',
        }),
      body: jsonBody,
    },
  ];
}

describe('request bodies that end badly, sent to a gateway process', () => {
  let gateway: TokenedGatewayProcess;
  before(async () => {
    pngBytes = await makePng(64, 64);
    await editForm();
    // A body that stops coming is timed out in seconds, not the default two minutes.
    gateway = await startTokenedGatewayProcess({ IMAGEGATE_REQUEST_TIMEOUT_MS: '3000' });
  });
  after(() => gateway.stop());

  /** The process is alive, serves, and printed no uncaught error; its gauges come back to 0. */
  async function assertStillServing(): Promise<void> {
    assert.equal(gateway.child.exitCode, null, `the process exited:\n${gateway.stderr()}`);
    const health = await fetch(`${gateway.url}/healthz`);
    assert.equal(health.status, 200);
    const generated = await fetch(`${gateway.url}${GENERATION_URL}`, {
      method: 'POST',
      headers: { authorization: gateway.authorization, 'content-type': 'application/json' },
      body: JSON_BODY,
    });
    assert.equal(generated.status, 200, await generated.text());
    assert.doesNotMatch(gateway.stderr(), /uncaught|unhandled|Error:/i, gateway.stderr());
  }

  it('answers an upload form whose body ends inside the file part with 400, and lives on', async () => {
    for (const ending of ['cut-then-fin', 'chunked-cut-then-last-chunk'] as const) {
      const form = await uploadForm(gateway, ending.length);
      const seen = await sendEnding(
        gateway.port,
        headOf('POST', UPLOAD_URL, { 'Content-Type': form.contentType }),
        form.body,
        ending,
      );
      assert.equal(seen.status, 400, `${ending}: ${seen.body}\n${gateway.stderr()}`);
      assert.equal(JSON.parse(seen.body).code, 'InvalidParameter', ending);
    }
    await assertStillServing();
  });

  it('survives truncated, aborted and malformed bodies on every route that reads one', async () => {
    const exchanges: Promise<[string, Seen]>[] = [];
    let index = 0;
    for (const route of routes())
      for (const ending of ENDINGS) {
        const body = await route.body(gateway, index++);
        exchanges.push(
          sendEnding(gateway.port, route.head(gateway), body, ending).then((seen) => [
            `${route.name} / ${ending}`,
            seen,
          ]),
        );
      }
    for (const ending of ENDINGS) {
      const form = await uploadForm(gateway, index++);
      exchanges.push(
        sendEnding(
          gateway.port,
          headOf('POST', UPLOAD_URL, { 'Content-Type': form.contentType }),
          form.body,
          ending,
        ).then((seen) => [`upload / ${ending}`, seen]),
      );
    }
    const seen = await Promise.all(exchanges);
    for (const [name, { status, body }] of seen) {
      // Cut or reset bodies may end before an answer; an answer is never a 500.
      assert.ok(status < 500 || status === 503, `${name}: ${status} ${body}`);
      if (name.endsWith('/ whole') || name.endsWith('/ chunked-whole'))
        assert.notEqual(status, 0, `${name}: answered`);
    }
    await assertStillServing();
    await assertGaugesBackToZero();
  });

  it('gives back the body bytes of refused chunked forms whose callers keep sending', async () => {
    // No credentials: a made-up policy and Signature, refused 401 once the fields are read.
    const bogusUpload = encodeForm([
      { name: 'OSSAccessKeyId', value: 'imagegate' },
      { name: 'Signature', value: 'bogus' },
      { name: 'policy', value: Buffer.from('{"made":"up"}').toString('base64') },
      { name: 'key', value: 'x/y.png' },
      { name: 'file', value: Buffer.alloc(256 * 1024, 1), filename: 'y.png' },
    ]);
    // Refused at its 33rd field, with more to come.
    const tooManyFields = encodeForm([
      ...Array.from({ length: 41 }, (_, field) => ({
        name: `field${field}`,
        value: 'v'.repeat(8 * 1024),
      })),
      { name: 'image', value: pngBytes, filename: 'in.png' },
    ]);
    const sends = [
      {
        head: headOf('POST', UPLOAD_URL, { 'Content-Type': bogusUpload.contentType }),
        form: bogusUpload,
      },
      {
        head: headOf('POST', '/v1/images/edits', {
          Authorization: gateway.authorization,
          'Content-Type': tooManyFields.contentType,
        }),
        form: tooManyFields,
      },
    ];
    const statuses: number[] = [];
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        sends.flatMap(({ head, form }) =>
          Array.from({ length: 4 }, () =>
            sendWholeBodyAnyway(gateway.port, {
              head,
              body: form.body,
              framing: 'chunked',
              writeBytes: 16 * 1024,
            }),
          ),
        ),
      );
      statuses.push(...answers.map((answer) => answer.status));
    }
    await assertGaugesBackToZero();
    assert.deepEqual(new Set(statuses), new Set([400, 401]));
  });

  const assertGaugesBackToZero = () => assertLevelsBackToZero(gateway, ANSWER_WAIT_MS);
});
