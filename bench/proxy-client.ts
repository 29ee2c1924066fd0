import { Agent, request } from 'node:http';
import { MODEL_A } from '../src/domain/models.js';

/** The request the benches send: one image of model A, a short prompt. */
export const GENERATION_BODY = JSON.stringify({
  model: MODEL_A,
  input: { messages: [{ role: 'user', content: [{ text: 'a lighthouse at dusk' }] }] },
  parameters: { n: 1 },
});

export interface Answer {
  status: number;
  ms: number;
  /** Epoch ms at which the request started, to compare with the upstream's clock. */
  startedAt: number;
}

/** One POST over `agent`, its whole answer read. */
export function post(
  agent: Agent,
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
): Promise<Answer> {
  const startedAt = Date.now();
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (response) => {
        response.resume();
        response.once('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            ms: Number(process.hrtime.bigint() - started) / 1e6,
            startedAt,
          }),
        );
        response.once('error', reject);
      },
    );
    outgoing.once('error', reject);
    outgoing.end(body);
  });
}

/** One caller alone: `count` requests one after another on a kept-alive connection. */
export async function sequentialLatency(
  url: string,
  body: string,
  headers: Record<string, string>,
  count: number,
): Promise<{ medianMs: number; errors: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < Math.min(20, count); i++) await post(agent, url, body, headers);
    const times: number[] = [];
    let errors = 0;
    for (let i = 0; i < count; i++) {
      const answer = await post(agent, url, body, headers);
      if (answer.status !== 200) errors += 1;
      times.push(answer.ms);
    }
    times.sort((a, b) => a - b);
    return { medianMs: times[Math.floor(times.length / 2)] as number, errors };
  } finally {
    agent.destroy();
  }
}
