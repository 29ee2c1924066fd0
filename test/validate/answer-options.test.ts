import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { modelABody, modelBBody } from '../helpers/requests.js';
import {
  type AcceptedCase,
  acceptedByValidator,
  MODEL_A_DEFAULTS,
  MODELS,
  modelName,
  type RejectedCase,
  rejectedOverHttp,
} from './validation-table.js';

// docs/api.md, Streaming: the answer fields the official SDK sends, for both models.

const bodyOf = (model: string, parameters: Record<string, unknown>) =>
  model === MODEL_A ? modelABody(parameters) : modelBBody(parameters);

const rejected: RejectedCase[] = MODELS.flatMap((model) => [
  {
    name: `${modelName(model)}: result_format "text"`,
    body: bodyOf(model, { result_format: 'text' }),
    path: 'parameters.result_format',
    problem: /^must be "message"$/,
  },
  {
    name: `${modelName(model)}: stream as a string`,
    body: bodyOf(model, { stream: 'true' }),
    path: 'parameters.stream',
    problem: /^must be a boolean$/,
  },
  {
    name: `${modelName(model)}: incremental_output as a number`,
    body: bodyOf(model, { incremental_output: 1 }),
    path: 'parameters.incremental_output',
    problem: /^must be a boolean$/,
  },
]);

rejectedOverHttp('answer options: rejected', rejected);

const accepted: AcceptedCase[] = [
  {
    name: 'model A: no answer fields, a plain JSON answer',
    body: modelABody(),
    expect: { answer: { stream: false, incrementalOutput: false } },
  },
  {
    name: 'model A: stream false, incremental_output and result_format "message", as copied samples send them',
    body: modelABody({ stream: false, incremental_output: true, result_format: 'message' }),
    expect: {
      model: MODEL_A,
      parameters: MODEL_A_DEFAULTS,
      answer: { stream: false, incrementalOutput: true },
    },
  },
  {
    name: 'model A: stream true with sequential output',
    body: modelABody({ stream: true, incremental_output: true, enable_sequential: true }),
    expect: { parameters: { sequential: true }, answer: { stream: true, incrementalOutput: true } },
  },
  {
    name: 'model B: stream true, result_format "message"',
    body: modelBBody({ stream: true, result_format: 'message' }),
    expect: { model: MODEL_B, answer: { stream: true, incrementalOutput: false } },
  },
];

acceptedByValidator('answer options: accepted', accepted);
