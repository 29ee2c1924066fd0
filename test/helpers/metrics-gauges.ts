import { get } from 'node:http';
import { parseSamples } from '../metrics/prometheus-text.js';

/** Anything whose GET /metrics can be read: a gateway process, or one in this process. */
export interface GaugeReader {
  /** The value of every unlabelled gauge or sum of a labelled one, as GET /metrics shows it now. */
  gauges(): Promise<Record<string, number>>;
}

/**
 * Reads GET /metrics at `url`, with `authorization` unless it is public: each gauge, labelled ones
 * summed. `ownConnection`: on a connection closed after the answer, so that none stays open in
 * the gateway's count of connections (polls are slower then).
 */
export async function readGauges(
  url: string,
  options: { authorization?: string; ownConnection?: boolean } = {},
): Promise<Record<string, number>> {
  const headers: Record<string, string> =
    options.authorization === undefined ? {} : { authorization: options.authorization };
  const { status, text } =
    options.ownConnection === true
      ? await getOnOwnConnection(`${url}/metrics`, headers)
      : await fetch(`${url}/metrics`, { headers }).then(async (response) => ({
          status: response.status,
          text: await response.text(),
        }));
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

function getOnOwnConnection(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false, headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text: body }));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}
