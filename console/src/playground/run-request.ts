import { api, authorization, errorOf, messageOf } from '../api';
import { readEventStream } from './event-stream';
import { recordedSplit, splitText } from './recorded-split';

const GENERATION_PATH = '/api/v1/services/aigc/multimodal-generation/generation';

/** One image of an answer, with when it arrived after the request was sent. */
export interface ArrivedImage {
  url: string;
  arrivedMs: number;
}

/** What the playground shows of a request while it runs and once it ended. */
export interface RunState {
  phase: 'running' | 'done' | 'failed' | 'canceled';
  images: ArrivedImage[];
  usage: Record<string, unknown> | undefined;
  requestId: string | undefined;
  serverTiming: string | undefined;
  /** A stream's split, read from its ledger row after its last event (recorded-split.ts). */
  recordedTiming: string | undefined;
  error: string | undefined;
  task: { id: string; status: string } | undefined;
}

export const STARTED: RunState = {
  phase: 'running',
  images: [],
  usage: undefined,
  requestId: undefined,
  serverTiming: undefined,
  recordedTiming: undefined,
  error: undefined,
  task: undefined,
};

type Update = (change: (state: RunState) => RunState) => void;

interface Answer {
  output?: {
    choices?: { message?: { content?: { image?: string }[] } }[];
    task_id?: string;
    task_status?: string;
    code?: string;
    message?: string;
  };
  usage?: Record<string, unknown>;
  request_id?: string;
  code?: string;
  message?: string;
}

function imagesOf(answer: Answer): string[] {
  const urls: string[] = [];
  for (const choice of answer.output?.choices ?? [])
    for (const item of choice.message?.content ?? [])
      if (typeof item.image === 'string') urls.push(item.image);
  return urls;
}

function requestHeaders(namesUploads: boolean): Record<string, string> {
  return {
    ...authorization(),
    'content-type': 'application/json',
    ...(namesUploads ? { 'x-dashscope-ossresourceresolve': 'enable' } : {}),
  };
}

/**
 * Streams a generation (docs/api.md §10): every image event is shown as it arrives; with
 * `incremental` (model A's sequential mode) that is one event per image, then the usage.
 */
export async function streamGeneration(
  body: Record<string, unknown>,
  namesUploads: boolean,
  update: Update,
): Promise<void> {
  const started = performance.now();
  const sent = {
    ...body,
    parameters: { ...(body.parameters as object), incremental_output: true },
  };
  const response = await fetch(GENERATION_PATH, {
    method: 'POST',
    headers: { ...requestHeaders(namesUploads), 'x-dashscope-sse': 'enable' },
    body: JSON.stringify(sent),
  });
  const serverTiming = response.headers.get('server-timing') ?? undefined;
  let requestId = response.headers.get('x-request-id') ?? undefined;
  update((state) => ({ ...state, serverTiming, requestId }));
  if (!response.ok || response.body === null) {
    const error = await errorOf(response);
    update((state) => ({ ...state, phase: 'failed', error: messageOf(error) }));
    return;
  }
  await readEventStream(response.body, (event) => {
    const answer = JSON.parse(event.data) as Answer;
    if (event.event === 'error') {
      const message = `${answer.code ?? 'Error'}: ${answer.message ?? ''}`;
      update((state) => ({ ...state, phase: 'failed', error: message }));
      return;
    }
    const arrivedMs = Math.round(performance.now() - started);
    const urls = imagesOf(answer).map((url) => ({ url, arrivedMs }));
    requestId = answer.request_id ?? requestId;
    update((state) => ({
      ...state,
      images: [...state.images, ...urls],
      usage: answer.usage ?? state.usage,
      requestId: answer.request_id ?? state.requestId,
    }));
  });
  update((state) => (state.phase === 'running' ? { ...state, phase: 'done' } : state));
  if (requestId === undefined) return;
  const split = await recordedSplit(requestId, response.headers.get('date') ?? undefined);
  if (split === undefined) return;
  // A request started meanwhile keeps its own state.
  update((state) =>
    state.requestId === requestId ? { ...state, recordedTiming: splitText(split) } : state,
  );
}

const TASK_POLL_MS = 1000;
const ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELED', 'UNKNOWN']);

/** Submits the request as a task (docs/api.md §11) and polls it until it ends or `stop` aborts. */
export async function runAsTask(
  body: Record<string, unknown>,
  namesUploads: boolean,
  update: Update,
  stop: AbortSignal,
): Promise<void> {
  const response = await fetch(GENERATION_PATH, {
    method: 'POST',
    headers: { ...requestHeaders(namesUploads), 'x-dashscope-async': 'enable' },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    const error = await errorOf(response);
    update((state) => ({ ...state, phase: 'failed', error: messageOf(error) }));
    return;
  }
  const submitted = (await response.json()) as Answer;
  const id = submitted.output?.task_id ?? '';
  update((state) => ({
    ...state,
    requestId: submitted.request_id,
    task: { id, status: submitted.output?.task_status ?? 'PENDING' },
  }));
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, TASK_POLL_MS));
    if (stop.aborted) return;
    const polled = await api<Answer>(`/api/v1/tasks/${encodeURIComponent(id)}`);
    const status = polled.output?.task_status ?? 'UNKNOWN';
    update((state) => ({ ...state, task: { id, status } }));
    if (!ENDED.has(status)) continue;
    update((state) => endedTask(state, status, polled));
    return;
  }
}

function endedTask(state: RunState, status: string, polled: Answer): RunState {
  if (status === 'SUCCEEDED')
    return {
      ...state,
      phase: 'done',
      images: imagesOf(polled).map((url) => ({ url, arrivedMs: 0 })),
      usage: polled.usage,
    };
  if (status === 'CANCELED') return { ...state, phase: 'canceled' };
  const message = `${polled.output?.code ?? status}: ${polled.output?.message ?? ''}`;
  return { ...state, phase: 'failed', error: message };
}

export async function cancelTask(id: string): Promise<void> {
  await api(`/api/v1/tasks/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
}
