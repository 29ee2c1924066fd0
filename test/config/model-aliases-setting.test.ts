import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';

describe('model_aliases in the config file', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'imagegate-aliases-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  async function load(yaml: string) {
    const file = path.join(directory, 'gw.yaml');
    await writeFile(file, yaml);
    return loadConfig({ IMAGEGATE_CONFIG: file });
  }

  async function problemsOf(yaml: string): Promise<readonly string[]> {
    try {
      await load(yaml);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    assert.fail('expected a ConfigError');
  }

  it('has the upstream names of both models without any configuration', () => {
    assert.deepEqual(
      [...loadConfig({}).modelAliases],
      [
        ['wan2.7-image-pro', MODEL_A],
        ['qwen-image-2.0-pro', MODEL_B],
      ],
    );
  });

  it('adds the file’s aliases to the built-in ones, and may point a built-in one elsewhere', async () => {
    const config = await load(
      `model_aliases:\n  pro: ${MODEL_A}\n  team/edit:v2: ${MODEL_B}\n  wan2.7-image-pro: ${MODEL_B}\n`,
    );
    assert.deepEqual(
      [...config.modelAliases],
      [
        ['wan2.7-image-pro', MODEL_B],
        ['qwen-image-2.0-pro', MODEL_B],
        ['pro', MODEL_A],
        ['team/edit:v2', MODEL_B],
      ],
    );
    assert.equal((await load('model_aliases:\n')).modelAliases.size, 2, 'empty is the defaults');
  });

  it('refuses an alias of an unknown model, one that shadows a model id, and a malformed one, all at once', async () => {
    const [problem, ...others] = await problemsOf(
      `model_aliases:\n  fast: gpt-image-1\n  ${MODEL_B}: ${MODEL_A}\n  "bad name": ${MODEL_A}\n  n: 3\n`,
    );
    assert.deepEqual(others, []);
    assert.equal(
      problem?.replace(directory, '.'),
      './gw.yaml: model_aliases ' +
        '"bad name" is not an alias name: up to 100 letters, digits and ". _ : / -", starting with a letter or digit; ' +
        '"fast" must be gen-2.7-image-pro or txt-image-2.0-pro; ' +
        '"n" must be gen-2.7-image-pro or txt-image-2.0-pro; ' +
        '"txt-image-2.0-pro" is a model id, so it cannot be an alias',
    );
    const [notMapping] = await problemsOf('model_aliases: [a, b]\n');
    assert.equal(
      notMapping?.replace(directory, '.'),
      './gw.yaml: model_aliases must be a mapping of alias to model id',
    );
  });
});
