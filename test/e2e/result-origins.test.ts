import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { eventually } from '../helpers/billing-gateway.js';
import { GENERATION_URL, modelABody, modelBBody } from '../helpers/requests.js';
import { startTestGateway } from '../helpers/test-gateway.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request to the gateway on 127.0.0.1, carrying the `Host` a caller chose. */
function send(
  port: number,
  host: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: '127.0.0.1', port, method, path, headers: { ...headers, host } },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () =>
          resolve({
            status: incoming.statusCode ?? 0,
            headers: incoming.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        incoming.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

async function open(t: TestContext, env: Record<string, string> = {}) {
  const gateway = await startTestGateway({ env: { IMAGEGATE_TASK_POLL_MS: '50', ...env } });
  t.after(() => gateway.close());
  const port = Number(new URL(await gateway.listen()).port);
  const authorization = await gateway.bearer();
  const json = { authorization, 'content-type': 'application/json' };
  const dashScope = async (host: string, body: object, headers: Record<string, string> = {}) =>
    send(port, host, 'POST', GENERATION_URL, { ...json, ...headers }, JSON.stringify(body));
  const imagesOf = (answer: Answer): string[] => {
    assert.equal(answer.status, 200, answer.body);
    const parsed = JSON.parse(answer.body) as {
      output: { choices: { message: { content: { image: string }[] } }[] };
    };
    return parsed.output.choices.flatMap((choice) => choice.message.content.map((c) => c.image));
  };
  const openAi = async (host: string, body: object) => {
    const answer = await send(
      port,
      host,
      'POST',
      '/v1/images/generations',
      json,
      JSON.stringify(body),
    );
    assert.equal(answer.status, 200, answer.body);
    return (JSON.parse(answer.body) as { data: { url: string }[] }).data.map((item) => item.url);
  };
  const imageServed = async (url: string) => {
    const { pathname, search } = new URL(url);
    const answer = await send(port, `127.0.0.1:${port}`, 'GET', `${pathname}${search}`, {});
    return answer.status;
  };
  return { gateway, port, authorization, json, dashScope, imagesOf, openAi, imageServed };
}

const originOf = (url: string) => new URL(url).origin;

describe('image URLs without IMAGEGATE_PUBLIC_BASE_URL', () => {
  it('name the host the request was sent to when the server listens there or it is localhost', async (t) => {
    const { port, dashScope, imagesOf, openAi, imageServed } = await open(t);
    const [viaLocalhost] = imagesOf(
      await dashScope(`localhost:${port}`, modelBBody({ size: '512*512' })),
    );
    assert.equal(originOf(viaLocalhost!), `http://localhost:${port}`);
    const [viaAddress] = imagesOf(
      await dashScope(`127.0.0.1:${port}`, modelBBody({ size: '512*512' })),
    );
    assert.equal(originOf(viaAddress!), `http://127.0.0.1:${port}`);
    const [openAiUrl] = await openAi(`LOCALHOST:${port}`, {
      model: MODEL_B,
      prompt: 'x',
      size: '512x512',
    });
    assert.equal(originOf(openAiUrl!), `http://localhost:${port}`);
    // The signature covers the image, not the host: each URL serves, whichever host it names.
    for (const url of [viaLocalhost!, viaAddress!, openAiUrl!])
      assert.equal(await imageServed(url), 200);
  });

  it('never name another host than those: any other Host gets http://<host>:<port>', async (t) => {
    const { port, dashScope, imagesOf, openAi, authorization } = await open(t);
    for (const host of [
      'evil.example.com',
      `evil.example.com:${port}`,
      `localhost.evil.example.com:${port}`,
      `127.0.0.2:${port}`,
    ]) {
      const [url] = imagesOf(await dashScope(host, modelBBody({ size: '512*512' })));
      assert.equal(originOf(url!), `http://127.0.0.1:${port}`, host);
      const [openAiUrl] = await openAi(host, { model: MODEL_B, prompt: 'x', size: '512x512' });
      assert.equal(originOf(openAiUrl!), `http://127.0.0.1:${port}`, host);
    }
    const uploadHostFor = async (host: string) => {
      const path = `/api/v1/uploads?action=getPolicy&model=${MODEL_A}`;
      const certificate = await send(port, host, 'GET', path, { authorization });
      assert.equal(certificate.status, 200, certificate.body);
      return originOf(
        (JSON.parse(certificate.body) as { data: { upload_host: string } }).data.upload_host,
      );
    };
    assert.equal(await uploadHostFor('evil.example.com'), `http://127.0.0.1:${port}`);
    // A port forward from the caller's machine keeps working: loopback names follow at any port.
    assert.equal(await uploadHostFor('localhost:9000'), 'http://localhost:9000');
  });

  it("each answer names its own request's host: a replay and a task read later by another request", async (t) => {
    const { port, dashScope, imagesOf, json } = await open(t);
    const body = modelBBody({ size: '512*512' });
    const key = { 'idempotency-key': 'origins' };
    const [first] = imagesOf(await dashScope(`localhost:${port}`, body, key));
    const replay = await dashScope('evil.example.com', body, key);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    const [replayed] = imagesOf(replay);
    assert.equal(originOf(first!), `http://localhost:${port}`);
    assert.equal(replayed, first!.replace(`http://localhost:${port}`, `http://127.0.0.1:${port}`));

    const submitted = await dashScope(`localhost:${port}`, body, { 'x-dashscope-async': 'enable' });
    assert.equal(submitted.status, 200, submitted.body);
    const taskId = (JSON.parse(submitted.body) as { output: { task_id: string } }).output.task_id;
    const read = (host: string) => send(port, host, 'GET', `/api/v1/tasks/${taskId}`, json);
    await eventually(
      async () =>
        JSON.parse((await read(`127.0.0.1:${port}`)).body).output.task_status === 'SUCCEEDED',
    );
    for (const [host, origin] of [
      [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`],
      [`localhost:${port}`, `http://localhost:${port}`],
      ['evil.example.com', `http://127.0.0.1:${port}`],
    ] as const) {
      const [url] = imagesOf(await read(host));
      assert.equal(originOf(url!), origin, host);
    }
  });

  it("take back an answer's URL as an input image, whichever allowed host it names, and no other", async (t) => {
    const { port, dashScope, imagesOf } = await open(t);
    const [url] = imagesOf(await dashScope(`localhost:${port}`, modelBBody({ size: '512*512' })));
    // Read from our own storage: no fetch, which the address guard would refuse for localhost.
    const chained = await dashScope(
      `localhost:${port}`,
      modelABody({ size: '1K' }, [{ text: 'autumn' }, { image: url! }]),
    );
    assert.equal(chained.status, 200, chained.body);
    const elsewhere = url!.replace(`http://localhost:${port}`, 'http://evil.example.com');
    const refused = await dashScope(
      `localhost:${port}`,
      modelABody({ size: '1K' }, [{ text: 'autumn' }, { image: elsewhere }]),
    );
    assert.equal(refused.status, 400, refused.body);
  });
});

describe('image URLs with IMAGEGATE_PUBLIC_HOSTS or IMAGEGATE_PUBLIC_BASE_URL', () => {
  it('follow only the listed hosts', async (t) => {
    const { port, dashScope, imagesOf } = await open(t, {
      IMAGEGATE_PUBLIC_HOSTS: 'images.test,Gateway.test:8443',
    });
    const cases = [
      ['images.test', 'http://images.test'],
      ['gateway.test:8443', 'http://gateway.test:8443'],
      [`localhost:${port}`, `http://127.0.0.1:${port}`],
      ['images.test:81', `http://127.0.0.1:${port}`],
    ] as const;
    for (const [host, origin] of cases) {
      const [url] = imagesOf(await dashScope(host, modelBBody({ size: '512*512' })));
      assert.equal(originOf(url!), origin, host);
    }
  });

  it('name the public base URL whatever the Host', async (t) => {
    const { port, dashScope, imagesOf } = await open(t, {
      IMAGEGATE_PUBLIC_BASE_URL: 'https://cdn.example.com/gw/',
    });
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) {
      const [url] = imagesOf(await dashScope(host, modelBBody({ size: '512*512' })));
      assert.ok(url!.startsWith('https://cdn.example.com/gw/images/'), url);
    }
  });
});
