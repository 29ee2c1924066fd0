import { validateRequest } from '../src/validate/validate-request.js';
import { type BenchRow, medianMs } from './bench-row.js';

function body() {
  return {
    model: 'gen-2.7-image-pro',
    input: {
      messages: [{ role: 'user', content: [{ text: 'a red fox in the snow, watercolour' }] }],
    },
    parameters: {
      size: '1536*1024',
      n: 2,
      watermark: true,
      seed: 42,
      color_palette: [
        { hex: '#112233', ratio: '40.00%' },
        { hex: '#445566', ratio: '35.50%' },
        { hex: '#778899', ratio: '24.50%' },
      ],
    },
  };
}

export default async function bench(): Promise<BenchRow[]> {
  const iterations = 20_000;
  const bodies = Array.from({ length: iterations }, body);
  let index = 0;
  const perBatch = await medianMs(() => {
    for (let i = 0; i < 1000; i++) validateRequest(bodies[index++ % iterations]);
  }, 15);
  return [
    {
      name: 'validate a model A request with palette',
      value: (perBatch / 1000) * 1000,
      unit: 'µs',
      note: 'median of 15 batches of 1000',
    },
  ];
}
