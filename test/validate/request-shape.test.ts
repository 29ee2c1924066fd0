import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { modelABody, modelBBody } from '../helpers/requests.js';
import {
  type AcceptedCase,
  acceptedByValidator,
  bodyWithInput,
  bodyWithItems,
  imageUrl,
  MODEL_A_DEFAULTS,
  MODEL_B_DEFAULTS,
  MODELS,
  modelName,
  type RejectedCase,
  rejectedOverHttp,
} from './validation-table.js';

// docs/api.md §2.1-2.4 and §8 (one message; content, unknown fields, null).

const PROMPT = { text: 'a red fox in snow' };
const MESSAGE = { role: 'user', content: [PROMPT] };
const CONTENT = 'input.messages[0].content';

const rejected: RejectedCase[] = [
  { name: 'a body that is a JSON array', body: '[{"model":"gen-2.7-image-pro"}]', path: 'body' },
  {
    name: 'a missing model',
    body: { input: { messages: [MESSAGE] } },
    path: 'model',
    problem: /^is required$/,
  },
  {
    name: 'model null (null counts as absent)',
    body: { model: null, input: { messages: [MESSAGE] } },
    path: 'model',
    problem: /^is required$/,
  },
  {
    name: 'model as a number',
    body: { model: 27, input: { messages: [MESSAGE] } },
    path: 'model',
    problem: /^must be a string$/,
  },
  {
    name: 'model as an array of the id',
    body: { model: [MODEL_A], input: { messages: [MESSAGE] } },
    path: 'model',
    problem: /^must be a string$/,
  },
  {
    name: 'model as a boolean',
    body: { model: true, input: { messages: [MESSAGE] } },
    path: 'model',
    problem: /^must be a string$/,
  },
  {
    name: 'an unknown model id',
    body: { model: 'gen-2.7-image', input: { messages: [MESSAGE] } },
    path: 'model',
    problem: /must be one of gen-2\.7-image-pro, txt-image-2\.0-pro/,
  },
  {
    name: 'a model id in another case',
    body: { model: 'GEN-2.7-IMAGE-PRO', input: { messages: [MESSAGE] } },
    path: 'model',
    problem: /must be one of/,
  },
  {
    name: 'a model alias in another case',
    body: { model: 'WAN2.7-IMAGE-PRO', input: { messages: [MESSAGE] } },
    path: 'model',
    problem:
      /or an alias of one \(wan2\.7-image-pro, qwen-image-2\.0-pro\), got "WAN2\.7-IMAGE-PRO"$/,
  },
];

for (const model of MODELS) {
  const m = modelName(model);
  rejected.push(
    {
      name: `${m}: a missing input`,
      body: { model },
      path: 'input',
      problem: /^is required$/,
    },
    {
      name: `${m}: input null`,
      body: { model, input: null },
      path: 'input',
      problem: /^is required$/,
    },
    {
      name: `${m}: input as an array`,
      body: { model, input: [MESSAGE] },
      path: 'input',
      problem: /^must be an object$/,
    },
    {
      name: `${m}: input as a string`,
      body: { model, input: 'a red fox' },
      path: 'input',
      problem: /^must be an object$/,
    },
    {
      name: `${m}: input without messages`,
      body: bodyWithInput(model, {}),
      path: 'input.messages',
      problem: /^is required$/,
    },
    {
      name: `${m}: messages as an object`,
      body: bodyWithInput(model, { messages: MESSAGE }),
      path: 'input.messages',
      problem: /^must be an array$/,
    },
    {
      name: `${m}: zero messages`,
      body: bodyWithInput(model, { messages: [] }),
      path: 'input.messages',
      problem: /at least 1 item/,
    },
    {
      name: `${m}: two messages`,
      body: bodyWithInput(model, { messages: [MESSAGE, MESSAGE] }),
      path: 'input.messages',
      problem: /at most 1 item/,
    },
    {
      name: `${m}: a null message`,
      body: bodyWithInput(model, { messages: [null] }),
      path: 'input.messages[0]',
      problem: /^must be an object$/,
    },
    {
      name: `${m}: a message as a string`,
      body: bodyWithInput(model, { messages: ['a red fox'] }),
      path: 'input.messages[0]',
      problem: /^must be an object$/,
    },
    {
      name: `${m}: a message without role`,
      body: bodyWithInput(model, { messages: [{ content: [PROMPT] }] }),
      path: 'input.messages[0].role',
      problem: /^is required$/,
    },
    {
      name: `${m}: role assistant`,
      body: bodyWithInput(model, { messages: [{ role: 'assistant', content: [PROMPT] }] }),
      path: 'input.messages[0].role',
      problem: /^must be "user"$/,
    },
    {
      name: `${m}: role system`,
      body: bodyWithInput(model, { messages: [{ role: 'system', content: [PROMPT] }] }),
      path: 'input.messages[0].role',
      problem: /^must be "user"$/,
    },
    {
      name: `${m}: role User in another case`,
      body: bodyWithInput(model, { messages: [{ role: 'User', content: [PROMPT] }] }),
      path: 'input.messages[0].role',
      problem: /^must be "user"$/,
    },
    {
      name: `${m}: role as a number`,
      body: bodyWithInput(model, { messages: [{ role: 1, content: [PROMPT] }] }),
      path: 'input.messages[0].role',
      problem: /^must be a string$/,
    },
    {
      name: `${m}: a message without content`,
      body: bodyWithInput(model, { messages: [{ role: 'user' }] }),
      path: CONTENT,
      problem: /^is required$/,
    },
    {
      name: `${m}: content as a string`,
      body: bodyWithInput(model, { messages: [{ role: 'user', content: 'a red fox' }] }),
      path: CONTENT,
      problem: /^must be an array$/,
    },
    {
      name: `${m}: empty content`,
      body: bodyWithItems(model, []),
      path: CONTENT,
      problem: /at least 1 item/,
    },
    {
      name: `${m}: a content item that is a string`,
      body: bodyWithItems(model, ['a red fox']),
      path: `${CONTENT}[0]`,
      problem: /^must be an object$/,
    },
    {
      name: `${m}: a content item with neither text nor image`,
      body: bodyWithItems(model, [PROMPT, {}]),
      path: `${CONTENT}[1]`,
      problem: /exactly one of "text" or "image"/,
    },
    {
      name: `${m}: a content item with both text and image`,
      body: bodyWithItems(model, [{ text: 'a red fox', image: imageUrl(0) }]),
      path: `${CONTENT}[0]`,
      problem: /exactly one of "text" or "image"/,
    },
    {
      name: `${m}: a content item whose text and image are both null`,
      body: bodyWithItems(model, [PROMPT, { text: null, image: null }]),
      path: `${CONTENT}[1]`,
      problem: /exactly one of "text" or "image"/,
    },
    {
      name: `${m}: text as a number`,
      body: bodyWithItems(model, [{ text: 42 }]),
      path: `${CONTENT}[0].text`,
      problem: /^must be a string$/,
    },
    {
      name: `${m}: text as an array of strings`,
      body: bodyWithItems(model, [{ text: ['a', 'fox'] }]),
      path: `${CONTENT}[0].text`,
      problem: /^must be a string$/,
    },
    {
      name: `${m}: image as an object`,
      body: bodyWithItems(model, [PROMPT, { image: { url: imageUrl(0) } }]),
      path: `${CONTENT}[1].image`,
      problem: /^must be a string$/,
    },
    {
      name: `${m}: a content item with a type field (OpenAI style)`,
      body: bodyWithItems(model, [{ type: 'text', text: 'a red fox' }]),
      path: `${CONTENT}[0].type`,
      problem: /is not a field of model/,
    },
    {
      name: `${m}: no text item, only an image`,
      body: bodyWithItems(model, [{ image: imageUrl(0) }]),
      path: CONTENT,
      problem: /exactly one text item, found none/,
    },
    {
      name: `${m}: two text items`,
      body: bodyWithItems(model, [{ text: 'a red fox' }, { text: 'in snow' }]),
      path: CONTENT,
      problem: /exactly one text item, found more/,
    },
    {
      name: `${m}: two text items around an image`,
      body: bodyWithItems(model, [{ text: 'a' }, { image: imageUrl(0) }, { text: 'b' }]),
      path: CONTENT,
      problem: /exactly one text item, found more/,
    },
    {
      name: `${m}: an empty text`,
      body: bodyWithItems(model, [{ text: '' }]),
      path: `${CONTENT}[0].text`,
      problem: /^must not be empty$/,
    },
    {
      name: `${m}: a text of spaces, tabs and newlines`,
      body: bodyWithItems(model, [{ image: imageUrl(0) }, { text: '  \t\n\r ' }]),
      path: `${CONTENT}[1].text`,
      problem: /^must not be empty$/,
    },
    {
      name: `${m}: a text of ideographic spaces`,
      body: bodyWithItems(model, [{ text: '\u3000\u3000' }]),
      path: `${CONTENT}[0].text`,
      problem: /^must not be empty$/,
    },
    {
      name: `${m}: an unknown top-level field`,
      body: { ...bodyWithItems(model, [PROMPT]), stream: true },
      path: 'stream',
      problem: new RegExp(`is not a field of model ${model.replace(/\./g, '\\.')}`),
    },
    {
      name: `${m}: an unknown field in input`,
      body: bodyWithInput(model, { messages: [MESSAGE], history: [] }),
      path: 'input.history',
      problem: /is not a field of model/,
    },
    {
      name: `${m}: an unknown field in the message`,
      body: bodyWithInput(model, { messages: [{ ...MESSAGE, name: 'alice' }] }),
      path: 'input.messages[0].name',
      problem: /is not a field of model/,
    },
    {
      name: `${m}: an unknown parameter`,
      body: bodyWithItems(model, [PROMPT], { steps: 30 }),
      path: 'parameters.steps',
      problem: /is not a field of model/,
    },
    {
      name: `${m}: parameters as an array`,
      body: { ...bodyWithItems(model, [PROMPT]), parameters: [] },
      path: 'parameters',
      problem: /^must be an object$/,
    },
    {
      name: `${m}: parameters as a string`,
      body: { ...bodyWithItems(model, [PROMPT]), parameters: 'n=2' },
      path: 'parameters',
      problem: /^must be an object$/,
    },
    {
      // Regression: a deep structure once overflowed the stack and answered 500.
      name: `${m}: a 100000-deep nested array in an unknown field`,
      body: `{"model":"${model}","input":{"messages":[{"role":"user","content":[{"text":"x"}]}]},"deep":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
      path: 'deep',
      problem: /is not a field of model/,
    },
    {
      name: `${m}: a 100000-deep nested object in the text`,
      body: `{"model":"${model}","input":{"messages":[{"role":"user","content":[{"text":${'{"a":'.repeat(100_000)}null${'}'.repeat(100_000)}}]}]}}`,
      path: `${CONTENT}[0].text`,
      problem: /^must be a string$/,
    },
  );
}

rejectedOverHttp('request shape: rejected', rejected);

const accepted: AcceptedCase[] = [
  {
    name: 'model A: a minimal text-to-image body, with every default applied',
    body: modelABody(),
    expect: {
      model: MODEL_A,
      prompt: { text: 'a red fox in snow', truncated: false },
      images: [],
      mode: 'text-to-image',
      parameters: MODEL_A_DEFAULTS,
    },
  },
  {
    name: 'model B: a minimal text-to-image body, with every default applied',
    body: modelBBody(),
    expect: {
      model: MODEL_B,
      prompt: { text: 'a lighthouse at dusk', truncated: false },
      images: [],
      mode: 'text-to-image',
      parameters: MODEL_B_DEFAULTS,
    },
  },
  {
    name: 'model A by its upstream name, an alias, as its model id',
    body: { ...modelABody(), model: 'wan2.7-image-pro' },
    expect: { model: MODEL_A, parameters: MODEL_A_DEFAULTS },
  },
  {
    name: 'model B by its upstream name, an alias, as its model id',
    body: { ...modelBBody(), model: 'qwen-image-2.0-pro' },
    expect: { model: MODEL_B, parameters: MODEL_B_DEFAULTS },
  },
  {
    name: 'model A: parameters null as absent',
    body: { ...modelABody(), parameters: null },
    expect: { model: MODEL_A, parameters: MODEL_A_DEFAULTS },
  },
  {
    name: 'model B: parameters null as absent',
    body: { ...modelBBody(), parameters: null },
    expect: { model: MODEL_B, parameters: MODEL_B_DEFAULTS },
  },
  {
    name: 'model A: empty parameters',
    body: modelABody({}),
    expect: { parameters: MODEL_A_DEFAULTS },
  },
  {
    name: 'model B: empty parameters',
    body: modelBBody({}),
    expect: { parameters: MODEL_B_DEFAULTS },
  },
  {
    name: 'model A: every parameter null, each taking its default',
    body: modelABody({
      bbox_list: null,
      enable_sequential: null,
      size: null,
      n: null,
      thinking_mode: null,
      color_palette: null,
      watermark: null,
      seed: null,
    }),
    expect: { mode: 'text-to-image', parameters: MODEL_A_DEFAULTS },
  },
  {
    name: 'model B: every parameter null, each taking its default',
    body: modelBBody({
      n: null,
      negative_prompt: null,
      prompt_extend: null,
      watermark: null,
      size: null,
      seed: null,
    }),
    expect: { mode: 'text-to-image', parameters: MODEL_B_DEFAULTS },
  },
];

for (const model of MODELS) {
  const m = modelName(model);
  accepted.push(
    {
      name: `${m}: a text item with image null as a text item`,
      body: bodyWithItems(model, [{ text: 'a red fox', image: null }]),
      expect: { prompt: { text: 'a red fox', truncated: false }, images: [] },
    },
    {
      name: `${m}: an image item with text null as an image item`,
      body: bodyWithItems(model, [{ text: 'make it blue' }, { image: imageUrl(0), text: null }]),
      expect: {
        images: [
          {
            path: `${CONTENT}[1].image`,
            source: { kind: 'url', url: imageUrl(0) },
          },
        ],
        mode: 'image-to-image',
      },
    },
    {
      name: `${m}: the text item after the image, with the image path kept`,
      body: bodyWithItems(model, [{ image: imageUrl(0) }, { text: 'make it blue' }]),
      expect: {
        prompt: { text: 'make it blue', truncated: false },
        images: [{ path: `${CONTENT}[0].image`, source: { kind: 'url', url: imageUrl(0) } }],
      },
    },
    {
      name: `${m}: a prompt with surrounding whitespace, kept verbatim`,
      body: bodyWithItems(model, [{ text: '  a red fox \n' }]),
      expect: { prompt: { text: '  a red fox \n', truncated: false } },
    },
    {
      name: `${m}: a one-character prompt`,
      body: bodyWithItems(model, [{ text: 'x' }]),
      expect: { prompt: { text: 'x', truncated: false } },
    },
    {
      name: `${m}: a Chinese prompt`,
      body: bodyWithItems(model, [{ text: '雪中的一只红狐狸' }]),
      expect: { prompt: { text: '雪中的一只红狐狸', truncated: false } },
    },
    {
      name: `${m}: a prompt that is JSON-looking text`,
      body: bodyWithItems(model, [{ text: '{"model": null}' }]),
      expect: { prompt: { text: '{"model": null}', truncated: false } },
    },
  );
}

acceptedByValidator('request shape: accepted', accepted);
