import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { GENERATION_URL, modelABody, modelBBody } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

interface Answer {
  status: number;
  body: {
    code?: string;
    message?: string;
    output?: { finished?: boolean; choices: { message: { content: object[] } }[] };
    usage?: Record<string, unknown>;
  };
}

describe('model aliases over a socket', () => {
  let directory: string;
  let gateway: TestGateway;
  let baseUrl: string;
  let authorization: string;

  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'imagegate-alias-e2e-'));
    const config = path.join(directory, 'gw.yaml');
    await writeFile(config, `model_aliases:\n  house-style: ${MODEL_A}\n`);
    gateway = await startTestGateway({ env: { IMAGEGATE_CONFIG: config } });
    baseUrl = await gateway.listen();
    authorization = await gateway.bearer();
  });
  after(async () => {
    await gateway.close();
    await rm(directory, { recursive: true, force: true });
  });

  async function post(body: object, requestId: string, token = authorization): Promise<Answer> {
    const response = await fetch(`${baseUrl}${GENERATION_URL}`, {
      method: 'POST',
      headers: {
        authorization: token,
        'content-type': 'application/json',
        'x-request-id': requestId,
      },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Answer['body'] };
  }

  async function ledgerModelOf(requestId: string): Promise<string | undefined> {
    await gateway.admission.ledger.flush();
    const rows = await gateway.admission.usage.list({}, 1000);
    const row = rows.find((entry) => entry.requestId === requestId);
    assert.ok(row, `no ledger row for ${requestId}`);
    return row.model;
  }

  it('serves wan2.7-image-pro as model A, in model A’s shape, and records model A', async () => {
    const answer = await post(
      { ...modelABody({ size: '1K', n: 2 }), model: 'wan2.7-image-pro' },
      'alias-a',
    );
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.output?.finished, true);
    assert.equal(answer.body.output?.choices[0]?.message.content.length, 2);
    assert.equal(answer.body.usage?.size, '1024*1024');
    assert.equal(await ledgerModelOf('alias-a'), MODEL_A);
  });

  it('serves qwen-image-2.0-pro as model B, in model B’s shape, and records model B', async () => {
    const answer = await post(
      { ...modelBBody({ size: '512*512', negative_prompt: 'blur' }), model: 'qwen-image-2.0-pro' },
      'alias-b',
    );
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.output?.finished, undefined);
    assert.deepEqual(
      [answer.body.usage?.width, answer.body.usage?.height, answer.body.usage?.image_count],
      [512, 512, 1],
    );
    assert.equal(await ledgerModelOf('alias-b'), MODEL_B);
  });

  it('serves an alias from the config file', async () => {
    const answer = await post(
      { ...modelABody({ size: '1K' }), model: 'house-style' },
      'alias-file',
    );
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(await ledgerModelOf('alias-file'), MODEL_A);
  });

  it('holds an alias to its model’s rules, and records the model of a refused request', async () => {
    const answer = await post(
      { ...modelBBody({ thinking_mode: true }), model: 'qwen-image-2.0-pro' },
      'alias-refused',
    );
    assert.equal(answer.status, 400);
    assert.deepEqual(
      [answer.body.code, answer.body.message],
      ['InvalidParameter', `parameters.thinking_mode: is not a field of model ${MODEL_B}`],
    );
    assert.equal(await ledgerModelOf('alias-refused'), MODEL_B);
  });

  it('refuses an unknown model with 400 naming model and listing the aliases', async () => {
    const answer = await post({ ...modelABody(), model: 'wan2.6-image' }, 'alias-unknown');
    assert.equal(answer.status, 400);
    assert.equal(answer.body.code, 'InvalidParameter');
    assert.equal(
      answer.body.message,
      `model: must be one of ${MODEL_A}, ${MODEL_B} or an alias of one (wan2.7-image-pro, qwen-image-2.0-pro, house-style), got "wan2.6-image"`,
    );
    assert.equal(await ledgerModelOf('alias-unknown'), undefined);
  });

  it('checks a token’s allowed models against the model the alias names', async () => {
    const bearer = await gateway.bearer({ limits: { allowedModels: [MODEL_B] } });
    const refused = await post(
      { ...modelABody(), model: 'wan2.7-image-pro' },
      'alias-not-allowed',
      bearer,
    );
    assert.equal(refused.status, 401);
    assert.equal(refused.body.code, 'InvalidApiKey');
    const allowed = await post(
      { ...modelBBody({ size: '512*512' }), model: 'qwen-image-2.0-pro' },
      'alias-allowed',
      bearer,
    );
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
  });

  it('publishes the aliases in /openapi.json', async () => {
    const openapi = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
      components: { schemas: Record<string, { properties: { model: { enum: string[] } } }> };
      paths: Record<
        string,
        {
          post: {
            requestBody: {
              content: Record<
                string,
                { schema: { discriminator: { mapping: Record<string, string> } } }
              >;
            };
          };
        }
      >;
    };
    const { schemas } = openapi.components;
    assert.deepEqual(schemas.ModelARequest?.properties.model.enum, [
      MODEL_A,
      'wan2.7-image-pro',
      'house-style',
    ]);
    assert.deepEqual(schemas.ModelBRequest?.properties.model.enum, [MODEL_B, 'qwen-image-2.0-pro']);
    const body = openapi.paths[GENERATION_URL]?.post.requestBody.content['application/json'];
    assert.equal(
      body?.schema.discriminator.mapping['house-style'],
      '#/components/schemas/ModelARequest',
    );
  });
});
