import { get } from 'node:http';
import { parseSamples } from '../metrics/prometheus-text.js';

/** Anything whose GET /metrics can be read: a gateway process, or one in this process. */
export interface GaugeReader {
  /** The value of every unlabelled gauge or sum of a labelled one, as GET /metrics shows it now. */
  gauges(): Promise<Record<string, number>>;
}

/**
 * Reads GET /metrics at `url`, with `authorization` unless it is public: each gauge, labelled ones
 * summed.
 */
export async function readGauges(
  url: string,
  authorization?: string,
): Promise<Record<string, number>> {
  // A connection of its own, closed after the answer: none stays open in the gateway's count.
  const { status, text } = await new Promise<{ status: number; text: string }>(
    (resolve, reject) => {
      const request = get(
        `${url}/metrics`,
        { agent: false, headers: authorization === undefined ? {} : { authorization } },
        (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text: body }));
          response.on('error', reject);
        },
      );
      request.on('error', reject);
    },
  );
  if (status !== 200) throw new Error(`GET /metrics answered ${status}`);
  const types = new Map(
    [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1], match[2]]),
  );
  const values: Record<string, number> = {};
  for (const sample of parseSamples(text))
    if (types.get(sample.name) === 'gauge')
      values[sample.name] = (values[sample.name] ?? 0) + sample.value;
  return values;
}
