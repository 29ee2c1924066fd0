/** One sample of Prometheus's text format: `name{label="value",...} number`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseSamples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = SAMPLE.exec(line);
      if (match === null) throw new Error(`not a sample: ${line}`);
      const labels: Record<string, string> = {};
      for (const [, name, value] of (match[2] ?? '').matchAll(LABEL))
        labels[name as string] = value as string;
      return { name: match[1] as string, labels, value: Number(match[3]) };
    });
}

/** The samples named `name` whose labels include `labels`, as label sets with their values. */
export function samplesOf(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): { labels: Record<string, string>; value: number }[] {
  return samples
    .filter(
      (sample) =>
        sample.name === name &&
        Object.entries(labels).every(([label, value]) => sample.labels[label] === value),
    )
    .map(({ labels: sampleLabels, value }) => ({ labels: sampleLabels, value }));
}
