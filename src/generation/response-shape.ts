import type { GenerationRequest } from '../domain/generation-request.js';
import { MODEL_A } from '../domain/models.js';
import type { GenerationResult } from './generation-service.js';

export interface ModelAResponse {
  output: {
    choices: {
      finish_reason: 'stop';
      message: { role: 'assistant'; content: { type: 'image'; image: string }[] };
    }[];
    finished: true;
  };
  usage: {
    image_count: number;
    size: string;
    input_tokens: number;
    output_tokens: number;
    total_tokens: number;
  };
  request_id: string;
}

export interface ModelBResponse {
  output: {
    choices: {
      finish_reason: 'stop';
      message: { role: 'assistant'; content: { image: string }[] };
    }[];
  };
  usage: { image_count: number; width: number; height: number };
  request_id: string;
}

/** The success body of docs/api.md §5, in the shape of the request's model. */
export function shapeResponse(
  request: Pick<GenerationRequest, 'model'>,
  result: GenerationResult,
  requestId: string,
): ModelAResponse | ModelBResponse {
  const imageCount = result.imageUrls.length;
  if (request.model === MODEL_A) {
    return {
      output: {
        choices: [
          {
            finish_reason: 'stop',
            message: {
              role: 'assistant',
              content: result.imageUrls.map((url) => ({ type: 'image' as const, image: url })),
            },
          },
        ],
        finished: true,
      },
      usage: {
        image_count: imageCount,
        size: `${result.width}*${result.height}`,
        input_tokens: result.tokens.input,
        output_tokens: result.tokens.output,
        total_tokens: result.tokens.input + result.tokens.output,
      },
      request_id: requestId,
    };
  }
  return {
    output: {
      choices: [
        {
          finish_reason: 'stop',
          message: { role: 'assistant', content: result.imageUrls.map((url) => ({ image: url })) },
        },
      ],
    },
    usage: { image_count: imageCount, width: result.width, height: result.height },
    request_id: requestId,
  };
}
