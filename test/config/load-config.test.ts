import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/config/settings.js';

describe('loadConfig', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'imagegate-config-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  function problemsOf(env: Record<string, string>): readonly string[] {
    try {
      loadConfig(env);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    assert.fail('expected a ConfigError');
  }

  it('runs on embedded defaults with an empty environment', () => {
    const config = loadConfig({});
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 8080);
    assert.equal(config.routePrefix, '/vendor');
    assert.equal(config.dataDir, path.resolve('data'));
    assert.deepEqual(config.database, {
      kind: 'sqlite',
      file: path.resolve('data', 'imagegate.db'),
    });
    assert.equal(config.maxBodyBytes, DEFAULT_MAX_BODY_BYTES);
    assert.equal(config.publicBaseUrl, 'http://127.0.0.1:8080');
    assert.equal(config.imageConnectTimeoutMs, 5000);
    assert.equal(config.imageFetchTimeoutMs, 20_000);
  });

  it('sizes the local engine from the cores unless told, and checks what it is told', () => {
    assert.deepEqual(loadConfig({}).localEngine, { workers: undefined, queueLimit: undefined });
    assert.deepEqual(
      loadConfig({ IMAGEGATE_LOCAL_WORKERS: '3', IMAGEGATE_LOCAL_QUEUE_LIMIT: '0' }).localEngine,
      { workers: 3, queueLimit: 0 },
    );
    const problems = problemsOf({ IMAGEGATE_LOCAL_WORKERS: '0', IMAGEGATE_LOCAL_QUEUE_LIMIT: 'x' });
    assert.ok(problems.some((problem) => problem.includes('IMAGEGATE_LOCAL_WORKERS')));
    assert.ok(problems.some((problem) => problem.includes('IMAGEGATE_LOCAL_QUEUE_LIMIT')));
  });

  it('admits the largest legal request by default: 9 images of 20 MiB as base64', () => {
    const base64Image = Math.ceil((20 * 1024 * 1024) / 3) * 4 + 'data:image/png;base64,'.length;
    assert.ok(DEFAULT_MAX_BODY_BYTES > 9 * base64Image + 64 * 1024);
  });

  it('reads a YAML file and a JSON file, and lets the environment override them', async () => {
    const yamlFile = path.join(directory, 'imagegate.yaml');
    await writeFile(yamlFile, 'port: 9000\nroute_prefix: /gw\nmax_body_bytes: 2048\n');
    const fromYaml = loadConfig({ IMAGEGATE_CONFIG: yamlFile });
    assert.equal(fromYaml.port, 9000);
    assert.equal(fromYaml.routePrefix, '/gw');
    assert.equal(fromYaml.maxBodyBytes, 2048);
    assert.equal(loadConfig({ IMAGEGATE_CONFIG: yamlFile, PORT: '9100' }).port, 9100);
    assert.equal(
      loadConfig({ IMAGEGATE_IMAGE_FETCH_TIMEOUT_MS: '45000' }).imageFetchTimeoutMs,
      45_000,
    );

    const jsonFile = path.join(directory, 'imagegate.json');
    await writeFile(
      jsonFile,
      JSON.stringify({ database_url: 'postgres://u@db/x', log_level: 'warn' }),
    );
    const fromJson = loadConfig({ IMAGEGATE_CONFIG: jsonFile });
    assert.deepEqual(fromJson.database, { kind: 'postgres', url: 'postgres://u@db/x' });
    assert.equal(fromJson.logLevel, 'warn');
  });

  it('reports every problem at once, each with the name the operator used', async () => {
    const file = path.join(directory, 'bad.yaml');
    await writeFile(file, 'port: "eighty"\nmystery_setting: 1\n');
    const problems = problemsOf({
      IMAGEGATE_CONFIG: file,
      IMAGEGATE_MAX_BODY_BYTES: '-5',
      IMAGEGATE_DATABASE_URL: 'mysql://x',
      IMAGEGATE_ROUTE_PREFIX: 'vendor/',
      IMAGEGATE_SECRET: 'short',
    });
    const text = problems.join('\n');
    assert.match(text, /bad\.yaml: port must be an integer/);
    assert.match(text, /unknown setting "mystery_setting"/);
    assert.match(text, /IMAGEGATE_MAX_BODY_BYTES must be between/);
    assert.match(text, /IMAGEGATE_DATABASE_URL must be a URL with scheme postgres or postgresql/);
    assert.match(text, /IMAGEGATE_ROUTE_PREFIX must be empty or a path/);
    assert.match(text, /IMAGEGATE_SECRET must be at least 32 characters/);
    assert.ok(problems.length >= 6);
  });

  it('reports a missing or unparsable config file', async () => {
    assert.match(
      problemsOf({ IMAGEGATE_CONFIG: path.join(directory, 'absent.yaml') }).join(),
      /cannot read/,
    );
    const broken = path.join(directory, 'broken.yaml');
    await writeFile(broken, 'port: [1, 2\n');
    assert.match(problemsOf({ IMAGEGATE_CONFIG: broken }).join(), /not valid YAML or JSON/);
    const list = path.join(directory, 'list.yaml');
    await writeFile(list, '- 1\n- 2\n');
    assert.match(problemsOf({ IMAGEGATE_CONFIG: list }).join(), /must hold a mapping/);
  });
});
