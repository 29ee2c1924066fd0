import type { GenerationRequest } from '../domain/generation-request.js';
import { MODEL_A } from '../domain/models.js';
import type { GenerationResult } from './generation-service.js';
import { type ModelAResponse, type ModelBResponse, shapeResponse } from './response-shape.js';

/** One image of model A's sequential output, in its own event: not the end yet, so no usage. */
export interface ModelAImageEvent {
  output: {
    choices: {
      finish_reason: null;
      message: { role: 'assistant'; content: { type: 'image'; image: string }[] };
    }[];
    finished: false;
  };
  request_id: string;
}

export type StreamEventData = ModelAResponse | ModelBResponse | ModelAImageEvent;

/** Whether a request's images are streamed one by one as each is stored and billed. */
export function streamsIncrementally(request: GenerationRequest): boolean {
  return (
    request.model === MODEL_A && request.parameters.sequential && request.answer.incrementalOutput
  );
}

/** The event of one image of an incremental stream. */
export function imageEventOf(url: string, requestId: string): ModelAImageEvent {
  return {
    output: {
      choices: [
        {
          finish_reason: null,
          message: { role: 'assistant', content: [{ type: 'image', image: url }] },
        },
      ],
      finished: false,
    },
    request_id: requestId,
  };
}

/**
 * The `data` of the result events a streamed answer sends once settled (docs/api.md §10.3): the
 * whole response in one event; or, for an incremental stream, whose images went out before, the
 * closing event with no image, `finish_reason: "stop"` and the usage of the whole request.
 */
export function settledEventsOf(
  request: GenerationRequest,
  result: GenerationResult,
  requestId: string,
): StreamEventData[] {
  const whole = shapeResponse(request, result, requestId);
  if (!streamsIncrementally(request) || !isModelAResponse(whole)) return [whole];
  const closing: ModelAResponse = Object.assign({}, whole, {
    output: {
      choices: [
        { finish_reason: 'stop' as const, message: { role: 'assistant' as const, content: [] } },
      ],
      finished: true as const,
    },
  });
  return [closing];
}

function isModelAResponse(body: ModelAResponse | ModelBResponse): body is ModelAResponse {
  return 'finished' in body.output;
}
