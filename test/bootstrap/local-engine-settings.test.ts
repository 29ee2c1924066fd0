import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startTestGateway } from '../helpers/test-gateway.js';

describe('the local engine settings', () => {
  it('bound the local engine as configured: one worker, no waiting room, a third job refused', async (t) => {
    const gateway = await startTestGateway({
      env: { IMAGEGATE_LOCAL_WORKERS: '1', IMAGEGATE_LOCAL_QUEUE_LIMIT: '0' },
    });
    t.after(() => gateway.close());
    const authorization = await gateway.bearer();
    // Slow renders (4K with a palette and a watermark), so that the three overlap.
    const body = modelABody({
      size: '4K',
      watermark: true,
      color_palette: [
        { hex: '#112233', ratio: '40.00%' },
        { hex: '#445566', ratio: '35.00%' },
        { hex: '#778899', ratio: '25.00%' },
      ],
    });
    const answers = await Promise.all(
      [1, 2, 3].map(() =>
        gateway.app.inject({
          method: 'POST',
          url: GENERATION_URL,
          headers: { authorization, 'content-type': 'application/json' },
          payload: body,
        }),
      ),
    );
    const statuses = answers.map((answer) => answer.statusCode).sort();
    assert.deepEqual(statuses, [200, 200, 503], answers.map((answer) => answer.body).join('\n'));
    const refused = answers.find((answer) => answer.statusCode === 503);
    assert.equal(refused?.json().code, 'Overloaded');
  });
});
