import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AttemptFailure, AttemptResult } from '../../src/channels/attempt-result.js';
import { OpenAiAdapter } from '../../src/channels/openai/openai-adapter.js';
import { UpstreamHttp } from '../../src/channels/upstream-http.js';
import type { OpenAiChannelConfig } from '../../src/config/channel-config.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fixtures/fake-openai.js';
import { channels, jobFor, MODEL_B, requestBody } from './channel-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

describe('the OpenAI adapter against a protocol-faithful fake', () => {
  let fake: FakeOpenAi;
  let strict: FakeOpenAi;
  let http: UpstreamHttp;

  before(async () => {
    [fake, strict] = await Promise.all([
      startFakeOpenAi(),
      startFakeOpenAi({ rejectResponseFormat: true }),
    ]);
    http = new UpstreamHttp();
  });
  after(async () => {
    await http.close();
    await Promise.all([fake.close(), strict.close()]);
  });

  const run = (
    target: FakeOpenAi,
    fields: Record<string, unknown> = {},
  ): Promise<AttemptResult> => {
    const [config] = channels([
      {
        name: 'oa',
        type: 'openai',
        base_url: target.url,
        api_key: target.apiKey,
        models: { [MODEL_B]: 'gpt-image-1' },
        ...fields,
      },
    ]);
    const job = jobFor(requestBody(MODEL_B, { n: 2 }));
    const timeUp = AbortSignal.timeout(2_000);
    return outputOf(
      new OpenAiAdapter(config as OpenAiChannelConfig, http).attempt({
        job,
        upstreamModel: 'gpt-image-1',
        signal: timeUp,
        upstreamSignal: timeUp,
        callerGone: () => false,
        waitOffTheClock: (wait) => wait(),
      }),
    );
  };
  const failed = (result: AttemptResult): AttemptFailure => {
    assert.ok(!result.ok, 'expected a failure');
    return result.failure;
  };

  it('generates b64_json PNGs at the closest accepted size', async () => {
    const result = await run(fake);
    assert.ok(result.ok);
    assert.deepEqual(
      [
        result.output.images.length,
        result.output.width,
        result.output.height,
        result.output.imagesReported,
      ],
      [2, 1024, 1024, undefined],
    );
    assert.equal(fake.calls.at(-1)?.headers.authorization, `Bearer ${fake.apiKey}`);
  });

  it('works with gpt-image servers that reject response_format once told not to send it', async () => {
    const refused = failed(await run(strict));
    assert.equal(refused.kind, 'error-body');
    assert.match(refused.detail, /set send_response_format: false/);
    assert.ok((await run(strict, { send_response_format: false })).ok);
  });

  it('sorts 400, moderation, 429, 500, malformed answers and resets', async () => {
    fake.script(
      {
        kind: 'error',
        status: 400,
        code: null,
        type: 'invalid_request_error',
        message: 'Invalid prompt',
      },
      {
        kind: 'error',
        status: 400,
        code: 'moderation_blocked',
        type: 'image_generation_user_error',
        message: 'Your request was rejected by the safety system.',
      },
      {
        kind: 'error',
        status: 429,
        code: 'rate_limit_exceeded',
        type: 'requests',
        message: 'Rate limit reached',
      },
      {
        kind: 'error',
        status: 500,
        code: null,
        type: 'server_error',
        message: 'The server had an error',
      },
      { kind: 'malformed' },
      { kind: 'reset' },
    );
    const invalid = failed(await run(fake));
    assert.deepEqual(
      [invalid.kind, invalid.callerError?.code, invalid.callerError?.message],
      ['rejected', 'InvalidParameter', 'Invalid prompt'],
    );
    assert.equal(failed(await run(fake)).callerError?.code, 'DataInspectionFailed');
    assert.equal(failed(await run(fake)).kind, 'throttled');
    assert.equal(failed(await run(fake)).kind, 'server-error');
    const malformed = failed(await run(fake));
    assert.deepEqual([malformed.kind, malformed.mayHaveBeenAccepted], ['malformed', true]);
    const reset = failed(await run(fake));
    assert.deepEqual([reset.kind, reset.mayHaveBeenAccepted], ['dropped', true]);
  });
});
