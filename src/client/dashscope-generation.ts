import { errorFromBody, GatewayTransportError } from './answer-error.js';
import type { GatewayClient } from './gateway-client.js';
import {
  type GenerationOutcome,
  type ImageRequest,
  type ImageUsage,
  sharedParameters,
} from './image-request.js';
import { type GatewayEvent, readEvents } from './sse-reader.js';
import { uploadFiles } from './uploads.js';

/** A DashScope answer body, or one event's data (docs/api.md §5, §10.3). */
export interface DashScopeAnswer {
  output?: {
    task_id?: string;
    task_status?: string;
    choices?: { message?: { content?: { image?: string }[] } }[];
  };
  usage?: ImageUsage;
  request_id?: string;
}

/** Called with each image as the gateway delivers it; the stream reads on once it resolves. */
export type ImageArrival = (url: string, index: number, requestId: string) => Promise<void>;

const REMOTE = /^(https?:|data:|oss:\/\/)/i;

/**
 * The DashScope body of `request`, local files uploaded first (docs/api.md §12); `resolveOss`
 * says the body names uploads, so the request must carry X-DashScope-OssResourceResolve.
 */
export async function dashScopeBody(
  client: GatewayClient,
  request: ImageRequest,
  extra: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<{ body: string; resolveOss: boolean }> {
  const local = request.images.filter((image) => !REMOTE.test(image.source));
  const uploaded = await uploadFiles(
    client,
    request.model,
    local.map((image) => image.source),
    signal,
  );
  const sources = request.images.map((image) =>
    REMOTE.test(image.source) ? image.source : (uploaded.shift() as string),
  );
  const content = [...sources.map((image) => ({ image })), { text: request.prompt }];
  const body = JSON.stringify({
    model: request.model,
    input: { messages: [{ role: 'user', content }] },
    parameters: { ...sharedParameters(request), ...extra },
  });
  return { body, resolveOss: sources.some((source) => source.startsWith('oss://')) };
}

function headersOf(resolveOss: boolean, more: Record<string, string>): Record<string, string> {
  return resolveOss ? { 'X-DashScope-OssResourceResolve': 'enable', ...more } : more;
}

/** The image URLs of an answer or event, in order. */
export function imagesOf(answer: DashScopeAnswer): string[] {
  return (answer.output?.choices ?? []).flatMap((choice) =>
    (choice.message?.content ?? []).flatMap((item) =>
      typeof item.image === 'string' ? [item.image] : [],
    ),
  );
}

/**
 * Generates over SSE with incremental output (docs/api.md §10): `onImage` runs for each image as
 * its event arrives, so a sequential group is saved image by image.
 */
export async function streamGeneration(
  client: GatewayClient,
  request: ImageRequest,
  onImage: ImageArrival,
  signal?: AbortSignal,
): Promise<GenerationOutcome> {
  const { body, resolveOss } = await dashScopeBody(
    client,
    request,
    { incremental_output: true },
    signal,
  );
  const response = await client.call(client.paths.generation, {
    body,
    signal,
    headers: headersOf(resolveOss, {
      'X-DashScope-SSE': 'enable',
      Accept: 'text/event-stream',
    }),
  });
  const outcome: GenerationOutcome = {
    requestId: response.headers.get('x-request-id') ?? '',
    images: [],
    usage: {},
  };
  if (response.body === null) throw new GatewayTransportError('the stream had no body');
  let finished = false;
  for await (const event of eventsOf(response)) {
    const data = event.data as DashScopeAnswer;
    if (event.event === 'error')
      throw errorFromBody(data as object, event.status ?? 500, outcome.requestId);
    outcome.requestId = data.request_id ?? outcome.requestId;
    for (const url of imagesOf(data)) {
      outcome.images.push(url);
      await onImage(url, outcome.images.length, outcome.requestId);
    }
    if (data.usage !== undefined) {
      outcome.usage = data.usage;
      finished = true;
    }
  }
  if (!finished)
    throw new GatewayTransportError(
      `the stream of request ${outcome.requestId} ended before its last event`,
    );
  return outcome;
}

/**
 * The answer's events; a gateway that answered JSON rather than a stream (one that ignores the
 * stream headers) gives its answer as the one event.
 */
async function* eventsOf(response: Response): AsyncGenerator<GatewayEvent, void, undefined> {
  if (response.headers.get('content-type')?.includes('text/event-stream') === true)
    yield* readEvents(response.body!);
  else yield { event: 'result', data: JSON.parse(await response.text()) as unknown };
}

/** Submits `request` as a task (docs/api.md §11.1); answers its id and the submission's id. */
export async function submitTask(
  client: GatewayClient,
  request: ImageRequest,
  signal?: AbortSignal,
): Promise<{ taskId: string; requestId: string }> {
  const { body, resolveOss } = await dashScopeBody(client, request, {}, signal);
  const { body: answer } = await client.json<DashScopeAnswer>(client.paths.generation, {
    body,
    signal,
    headers: headersOf(resolveOss, { 'X-DashScope-Async': 'enable' }),
  });
  const taskId = answer.output?.task_id;
  if (taskId === undefined) throw new GatewayTransportError('the submission answered no task_id');
  return { taskId, requestId: answer.request_id ?? '' };
}
