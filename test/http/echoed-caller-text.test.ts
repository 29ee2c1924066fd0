import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { ECHO_MAX_CHARACTERS } from '../../src/errors/echo.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { encodeForm } from '../helpers/sdk-uploads.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { makePng } from '../inputs/image-fixtures.js';

/** A caller's text far longer than any error should repeat: in a body, a megabyte. */
const HUGE_NAME = `x${'n'.repeat(1024 * 1024 - 1)}`;
/** In a URL or a header, which the HTTP parser bounds, what fits. */
const LONG_VALUE = `v${'w'.repeat(6 * 1024 - 1)}`;
/** A part's name sits in its header, which the form parser bounds at about 80 KB. */
const LONG_PART_NAME = `p${'q'.repeat(60 * 1024 - 1)}`;
/** An error body repeating a bounded prefix is small; one repeating the whole text is not. */
const MAX_ERROR_BODY_BYTES = 2048;

describe("an error message repeats at most a bounded prefix of the caller's text", () => {
  let gateway: TestGateway;
  let url: string;
  let authorization: string;
  before(async () => {
    gateway = await startTestGateway();
    url = await gateway.listen();
    authorization = await gateway.bearer();
  });
  after(() => gateway.close());

  /**
   * The answer is a 4xx whose body is small and names the text by a prefix, an ellipsis and its
   * length (a JSON path names it after its parents; a form parser may have cut it already).
   */
  async function assertBounded(response: Response, text: string): Promise<void> {
    const body = await response.text();
    assert.ok(
      response.status >= 400 && response.status < 500,
      `${response.status} ${body.slice(0, 300)}`,
    );
    assert.ok(body.length < MAX_ERROR_BODY_BYTES, `${body.length} bytes: ${body.slice(0, 300)}`);
    const prefix = text.slice(0, ECHO_MAX_CHARACTERS / 2);
    assert.match(body, new RegExp(`${prefix}[a-z]*… \\(\\d+ characters\\)`));
  }

  const json = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it('/v1/images/edits: an unknown form field of a 1 MB name', async () => {
    const form = encodeForm([
      { name: 'model', value: MODEL_B },
      { name: 'prompt', value: 'make it autumn' },
      { name: HUGE_NAME, value: 'x' },
      { name: 'image', value: await makePng(64, 64), filename: 'in.png' },
    ]);
    const response = await fetch(`${url}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization, 'content-type': form.contentType },
      body: form.body,
    });
    await assertBounded(response, HUGE_NAME);
  });

  it('/v1/images/generations: an unknown field of a 1 MB name, and a 1 MB size', async () => {
    await assertBounded(
      await json('/v1/images/generations', { model: MODEL_A, prompt: 'a fox', [HUGE_NAME]: 1 }),
      HUGE_NAME,
    );
    await assertBounded(
      await json('/v1/images/generations', { model: MODEL_A, prompt: 'a fox', size: HUGE_NAME }),
      HUGE_NAME,
    );
  });

  it('the DashScope route: an unknown parameter of a 1 MB name, a 1 MB model and a 1 MB size', async () => {
    await assertBounded(await json(GENERATION_URL, modelABody({ [HUGE_NAME]: 1 })), HUGE_NAME);
    await assertBounded(
      await json(GENERATION_URL, { ...modelABody(), model: HUGE_NAME }),
      HUGE_NAME,
    );
    await assertBounded(await json(GENERATION_URL, modelABody({ size: HUGE_NAME })), HUGE_NAME);
  });

  it('the upload form: a file part of a 60 KB name', async () => {
    const form = encodeForm([{ name: LONG_PART_NAME, value: Buffer.alloc(16), filename: 'f.png' }]);
    const response = await fetch(`${url}/vendor/api/v1/uploads`, {
      method: 'POST',
      headers: { 'content-type': form.contentType },
      body: form.body,
    });
    await assertBounded(response, LONG_PART_NAME);
  });

  it('query values and headers: getPolicy, the task listing, Content-Encoding, a token algorithm', async () => {
    const get = (path: string, headers: Record<string, string> = { authorization }) =>
      fetch(`${url}${path}`, { headers });
    await assertBounded(await get(`/vendor/api/v1/uploads?action=${LONG_VALUE}`), LONG_VALUE);
    await assertBounded(
      await get(`/vendor/api/v1/uploads?action=getPolicy&model=${LONG_VALUE}`),
      LONG_VALUE,
    );
    await assertBounded(await get(`/vendor/api/v1/tasks?start_time=${LONG_VALUE}`), LONG_VALUE);
    await assertBounded(await get(`/vendor/api/v1/tasks?${LONG_VALUE}=1`), LONG_VALUE);
    await assertBounded(
      await get(`/vendor/no/such/${LONG_VALUE}`),
      `/vendor/no/such/${LONG_VALUE}`,
    );
    await assertBounded(
      await json(GENERATION_URL, modelABody(), { 'content-encoding': LONG_VALUE }),
      LONG_VALUE,
    );
    const header = Buffer.from(JSON.stringify({ alg: LONG_VALUE, typ: 'JWT' })).toString(
      'base64url',
    );
    await assertBounded(
      await get('/vendor/api/v1/tasks', { authorization: `Bearer ${header}.e30.c2ln` }),
      LONG_VALUE,
    );
  });
});
