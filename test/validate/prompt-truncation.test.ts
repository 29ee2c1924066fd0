import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MODEL_A } from '../../src/domain/models.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import {
  type AcceptedCase,
  acceptedByValidator,
  bodyWithItems,
  MODELS,
  modelName,
  type RejectedCase,
  rejectedOverHttp,
} from './validation-table.js';

// docs/api.md §2.5: a prompt of at most 5000 characters, excess truncated, counted in
// Unicode code points, a surrogate pair never split, response header X-Prompt-Truncated: true.

const LIMIT = 5000;
const EMOJI = '\u{1F98A}'; // one code point, two UTF-16 units
const HAN = '狐';

const accepted: AcceptedCase[] = [];
for (const model of MODELS) {
  const m = modelName(model);
  const prompt = (text: string) => bodyWithItems(model, [{ text }]);
  accepted.push(
    {
      name: `${m}: exactly 5000 ASCII characters, untruncated`,
      body: prompt('a'.repeat(LIMIT)),
      expect: { prompt: { text: 'a'.repeat(LIMIT), truncated: false } },
    },
    {
      name: `${m}: 5001 ASCII characters, truncated to the first 5000`,
      body: prompt(`${'a'.repeat(LIMIT)}Z`),
      expect: { prompt: { text: 'a'.repeat(LIMIT), truncated: true } },
    },
    {
      name: `${m}: 12000 characters, truncated to 5000`,
      body: prompt('abc'.repeat(4000)),
      expect: { prompt: { text: 'abc'.repeat(4000).slice(0, LIMIT), truncated: true } },
    },
    {
      name: `${m}: 5000 Han characters, untruncated`,
      body: prompt(HAN.repeat(LIMIT)),
      expect: { prompt: { text: HAN.repeat(LIMIT), truncated: false } },
    },
    {
      name: `${m}: 5001 Han characters, truncated to 5000`,
      body: prompt(HAN.repeat(LIMIT + 1)),
      expect: { prompt: { text: HAN.repeat(LIMIT), truncated: true } },
    },
    {
      name: `${m}: 5000 astral code points (10000 UTF-16 units), untruncated: a pair counts once`,
      body: prompt(EMOJI.repeat(LIMIT)),
      expect: { prompt: { text: EMOJI.repeat(LIMIT), truncated: false } },
    },
    {
      name: `${m}: 5001 astral code points, truncated to 5000 whole pairs`,
      body: prompt(EMOJI.repeat(LIMIT + 1)),
      expect: { prompt: { text: EMOJI.repeat(LIMIT), truncated: true } },
    },
    {
      name: `${m}: 4999 ASCII + a pair (5000 code points, 5001 units), untruncated`,
      body: prompt(`${'a'.repeat(LIMIT - 1)}${EMOJI}`),
      expect: { prompt: { text: `${'a'.repeat(LIMIT - 1)}${EMOJI}`, truncated: false } },
    },
    {
      name: `${m}: a pair as the 5000th code point is kept whole, not split`,
      body: prompt(`${'a'.repeat(LIMIT - 1)}${EMOJI}z`),
      expect: { prompt: { text: `${'a'.repeat(LIMIT - 1)}${EMOJI}`, truncated: true } },
    },
    {
      name: `${m}: a pair as the 5001st code point is dropped whole`,
      body: prompt(`${'a'.repeat(LIMIT)}${EMOJI}`),
      expect: { prompt: { text: 'a'.repeat(LIMIT), truncated: true } },
    },
    {
      // Regression: a lone high surrogate once swallowed the unit after it as if it were a pair.
      name: `${m}: a lone high surrogate counts as one code point of its own`,
      body: prompt(`${'a'.repeat(LIMIT - 1)}\uD83Ez`),
      expect: { prompt: { text: `${'a'.repeat(LIMIT - 1)}\uD83E`, truncated: true } },
    },
    {
      name: `${m}: whitespace before a long prompt counts and is kept`,
      body: prompt(`  ${'a'.repeat(LIMIT)}`),
      expect: { prompt: { text: `  ${'a'.repeat(LIMIT - 2)}`, truncated: true } },
    },
  );
}
acceptedByValidator('prompt length: accepted', accepted);

const rejected: RejectedCase[] = [];
for (const model of MODELS) {
  rejected.push({
    name: `${modelName(model)}: a prompt of 6000 spaces, empty before any truncation`,
    body: bodyWithItems(model, [{ text: ' '.repeat(6000) }]),
    path: 'input.messages[0].content[0].text',
    problem: /^must not be empty$/,
  });
}
rejectedOverHttp('prompt length: rejected', rejected);

describe('prompt length: the X-Prompt-Truncated header', () => {
  let gateway: TestGateway;
  let authorization: string;
  before(async () => {
    gateway = await startTestGateway();
    authorization = await gateway.bearer();
  });
  after(() => gateway.close());

  const cases = MODELS.flatMap((model) => [
    { model, text: 'a'.repeat(LIMIT), header: undefined },
    { model, text: 'a'.repeat(LIMIT + 1), header: 'true' },
    { model, text: EMOJI.repeat(LIMIT), header: undefined },
    { model, text: EMOJI.repeat(LIMIT + 1), header: 'true' },
  ]);
  for (const { model, text, header } of cases) {
    const units = text.length;
    it(`${modelName(model)}: a ${units}-unit prompt passes validation with X-Prompt-Truncated ${header ?? 'absent'}`, async () => {
      const response = await gateway.app.inject({
        method: 'POST',
        url: GENERATION_URL,
        headers: { authorization, 'content-type': 'application/json' },
        // The smallest output each model takes, so that an engine, once wired in, renders fast.
        payload: bodyWithItems(model, [{ text }], { size: model === MODEL_A ? '1K' : '512*512' }),
      });
      // Past validation: a result, or 503 while no engine is configured; never a 400.
      assert.ok([200, 503].includes(response.statusCode), response.body);
      assert.equal(response.headers['x-prompt-truncated'], header);
    });
  }
});
