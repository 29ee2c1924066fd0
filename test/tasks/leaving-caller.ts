import { Worker } from 'node:worker_threads';
import { IMAGE_GENERATION_PATH } from '../../src/domain/api-paths.js';
import { MODEL_B } from '../../src/domain/models.js';

/** What a caller of a task submission saw before its connection closed. */
export interface SeenAnswer {
  /** 0 when no status line came. */
  status: number;
  /** The task id, when the whole answer came. */
  taskId: string | undefined;
  /** The caller destroyed its connection (rather than the gateway closing it after answering). */
  left: boolean;
}

/** A task submission on a raw connection of its own, which its caller may destroy at any time. */
export interface LeavingCaller {
  requestId: string;
  /**
   * Destroys the connection once what already reached its socket has been read, as a caller in
   * another process would have read it.
   */
  leave(): void;
  answer: Promise<SeenAnswer>;
}

/** When a caller leaves on its own: once the answer's head came, or this long after sending. */
export interface LeavePlan {
  afterHeaders?: boolean;
  afterMs?: number;
}

/**
 * Callers that each submit a task on a connection of their own (`Connection: close`) and may
 * destroy it; they run on a thread of their own (leaving-caller-worker.mjs).
 */
export class LeavingCallers {
  private readonly worker = new Worker(new URL('./leaving-caller-worker.mjs', import.meta.url));
  private readonly waiting = new Map<number, (seen: SeenAnswer) => void>();
  private nextId = 0;

  constructor(
    private readonly port: number,
    private readonly token: string,
  ) {
    this.worker.on('message', ({ id, seen }: { id: number; seen: SeenAnswer }) => {
      this.waiting.get(id)?.(seen);
      this.waiting.delete(id);
    });
  }

  /** Submits a task for `n` images of model B as `X-Request-Id: requestId` (the task keeps it). */
  submit(requestId: string, n: number, plan: LeavePlan = {}): LeavingCaller {
    const id = this.nextId++;
    const answer = new Promise<SeenAnswer>((resolve) => this.waiting.set(id, resolve));
    this.worker.postMessage({
      id,
      port: this.port,
      request: submission(this.token, requestId, n),
      leaveAfterHeaders: plan.afterHeaders === true,
      leaveAfterMs: plan.afterMs,
    });
    return { requestId, leave: () => this.worker.postMessage({ leave: id }), answer };
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

function submission(token: string, requestId: string, n: number): string {
  const body = JSON.stringify({
    model: MODEL_B,
    input: { messages: [{ role: 'user', content: [{ text: 'a harbour at dawn' }] }] },
    parameters: { n },
  });
  const head = [
    `POST ${IMAGE_GENERATION_PATH} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: close',
    `Authorization: Bearer ${token}`,
    'Content-Type: application/json',
    'X-DashScope-Async: enable',
    `X-Request-Id: ${requestId}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
  ].join('\r\n');
  return `${head}\r\n\r\n${body}`;
}
