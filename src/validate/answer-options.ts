import type { AnswerOptions } from '../domain/generation-request.js';

/** The answer fields of either model's parameters, after the schema check. */
export interface AnswerFieldsInput {
  stream?: boolean;
  incremental_output?: boolean;
  /** Only "message", which is the shape every answer has already: nothing to read. */
  result_format?: 'message';
}

export function readAnswerOptions(raw: AnswerFieldsInput): AnswerOptions {
  return { stream: raw.stream ?? false, incrementalOutput: raw.incremental_output ?? false };
}
