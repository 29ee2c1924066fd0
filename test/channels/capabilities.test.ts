import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  capabilitiesOf,
  missingFeatures,
  requiredFeatures,
} from '../../src/channels/capabilities.js';
import { channels, jobFor, MODEL_A, MODEL_B, requestBody } from './channel-fixtures.js';

const [dashscope, openai, local] = channels([
  { name: 'ds', type: 'dashscope', base_url: 'https://h', api_key: 'k' },
  {
    name: 'oa',
    type: 'openai',
    base_url: 'https://h',
    models: { [MODEL_A]: 'gpt-image-1' },
    max_input_images: 2,
  },
  { name: 'lo', type: 'local' },
]);

const needs = (body: object) => requiredFeatures(jobFor(body).request);

describe('channel capabilities', () => {
  it('lets DashScope and local channels do everything the models do', () => {
    const everything = needs(
      requestBody(MODEL_A, { bbox_list: [[[1, 1, 5, 5]], []], watermark: true }, [
        'https://a/1.png',
        'https://a/2.png',
      ]),
    );
    for (const config of [dashscope, local]) {
      assert.ok(config !== undefined);
      assert.deepEqual(missingFeatures(capabilitiesOf(config), everything), []);
    }
  });

  it('names what an OpenAI channel lacks', () => {
    assert.ok(openai !== undefined);
    const capabilities = capabilitiesOf(openai);
    assert.deepEqual(
      missingFeatures(
        capabilities,
        needs(
          requestBody(MODEL_A, { bbox_list: [[[1, 1, 5, 5]], [], []], watermark: true }, [
            'https://a/1',
            'https://a/2',
            'https://a/3',
          ]),
        ),
      ),
      ['3 input images', 'watermark (parameters.watermark)', 'bbox editing (parameters.bbox_list)'],
    );
    assert.deepEqual(
      missingFeatures(capabilities, needs(requestBody(MODEL_A, { enable_sequential: true }))),
      ['sequential output (parameters.enable_sequential)'],
    );
    assert.deepEqual(
      missingFeatures(
        capabilities,
        needs(
          requestBody(MODEL_A, {
            color_palette: [
              { hex: '#000000', ratio: '30.00%' },
              { hex: '#FFFFFF', ratio: '30.00%' },
              { hex: '#FF0000', ratio: '40.00%' },
            ],
          }),
        ),
      ),
      ['colour palette (parameters.color_palette)'],
    );
    assert.deepEqual(
      missingFeatures(capabilities, needs(requestBody(MODEL_B, { n: 2 }, ['https://a/1']))),
      [],
    );
    assert.equal(capabilities.sizes, 'closest');
  });

  it('does not count empty bbox entries as bbox editing', () => {
    assert.deepEqual(
      needs(requestBody(MODEL_A, { bbox_list: [[]] }, ['https://a/1'])).map(
        (feature) => feature.name,
      ),
      ['1 input image'],
    );
  });
});
