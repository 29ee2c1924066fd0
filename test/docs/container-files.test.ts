import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load-config.js';
import { SETTINGS } from '../../src/config/settings.js';

// The Dockerfile, compose.yaml and deploy/nginx.conf cannot be run here (no image registry), so
// this keeps them true to the code: every setting they give is one the gateway reads, and parses;
// every address, credential and port they name is the one the other side of it uses.

interface Instruction {
  keyword: string;
  argument: string;
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructionsOf(dockerfile: string): Instruction[] {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), argument: rest.join(' ') };
    });
}

/** The last stage: what the image runs. */
function finalStage(instructions: Instruction[]): Instruction[] {
  const starts = instructions.flatMap((instruction, index) =>
    instruction.keyword === 'FROM' ? [index] : [],
  );
  return instructions.slice(starts.at(-1));
}

/** `ENV A=1 B=2` instructions as one map. */
function environmentOf(stage: Instruction[]): Record<string, string> {
  return Object.fromEntries(
    stage
      .filter(({ keyword }) => keyword === 'ENV')
      .flatMap(({ argument }) =>
        [...argument.matchAll(/(\w+)=(\S+)/g)].map((match) => [match[1], match[2]]),
      ),
  );
}

const KNOWN_VARIABLES = new Set(
  Object.values(SETTINGS).flatMap((setting) => (setting.env === undefined ? [] : [setting.env])),
);

const HEALTH_PATHS = ['/healthz', '/readyz'];

describe('Dockerfile', async () => {
  const instructions = instructionsOf(await readFile('Dockerfile', 'utf8'));
  const stage = finalStage(instructions);
  const environment = environmentOf(stage);
  const packageJson = JSON.parse(await readFile('package.json', 'utf8')) as {
    scripts: Record<string, string>;
    engines: { node: string };
  };

  it("runs what `npm start` runs, as node itself (PID 1, so SIGTERM reaches the gateway's drain)", () => {
    const command = stage.find(({ keyword }) => keyword === 'CMD')?.argument;
    assert.deepEqual(JSON.parse(command ?? 'null'), ['node', 'dist/main.js']);
    assert.match(packageJson.scripts.start ?? '', /^exec node dist\/main\.js$/);
    assert.equal(stage.find(({ keyword }) => keyword === 'STOPSIGNAL')?.argument, 'SIGTERM');
  });

  it('builds on the Node.js major the project declares, in every stage', () => {
    const major = /(\d+)/.exec(packageJson.engines.node)?.[1];
    const images = instructions.filter(({ keyword }) => keyword === 'FROM');
    assert.ok(images.length >= 2, 'a build stage and a runtime stage');
    for (const { argument } of images) assert.match(argument, new RegExp(`^node:${major}-`));
  });

  it('sets only settings the gateway reads, which parse, and listens where it says', () => {
    for (const name of Object.keys(environment).filter((key) => key !== 'NODE_ENV'))
      assert.ok(KNOWN_VARIABLES.has(name), `${name} is not a setting of the gateway`);
    const config = loadConfig(environment);
    assert.equal(config.host, '0.0.0.0');
    const exposed = stage.find(({ keyword }) => keyword === 'EXPOSE')?.argument;
    assert.equal(Number(exposed), config.port);
    const volume = stage.find(({ keyword }) => keyword === 'VOLUME')?.argument;
    assert.deepEqual(JSON.parse(volume ?? 'null'), [environment.IMAGEGATE_DATA_DIR]);
    const health = stage.find(({ keyword }) => keyword === 'HEALTHCHECK')?.argument ?? '';
    assert.ok(health.includes(`http://127.0.0.1:${config.port}/healthz`), health);
  });

  it('copies into the image everything the start command and the CLI load', () => {
    const copied = stage
      .filter(({ keyword }) => keyword === 'COPY')
      .map(({ argument }) => argument.split(/\s+/).at(-1));
    for (const needed of ['./node_modules', './dist', './bin']) assert.ok(copied.includes(needed));
  });
});

interface ComposeService {
  image?: string;
  environment?: Record<string, string>;
  command?: string[];
  entrypoint?: string[];
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
}

describe('compose.yaml', async () => {
  const compose = parseYaml(await readFile('compose.yaml', 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const services = compose.services;
  const gateways = Object.entries(services).filter(([name]) => name.startsWith('gateway-'));
  const nginx = await readFile('deploy/nginx.conf', 'utf8');
  /** compose's `${NAME:?message}`, as the operator is told to set it. */
  const interpolated = (value: string) =>
    value.replace(/\$\{(\w+):\?[^}]*\}/g, (_match, name: string) =>
      name === 'IMAGEGATE_SECRET' ? 'x'.repeat(64) : `<${name}>`,
    );
  const environmentOfService = (service: ComposeService) =>
    Object.fromEntries(
      Object.entries(service.environment ?? {}).map(([name, value]) => [
        name,
        interpolated(String(value)),
      ]),
    );

  it('runs several gateways with the same settings, each of which the gateway reads and parses', () => {
    assert.ok(gateways.length >= 2);
    const first = JSON.stringify(gateways[0]?.[1].environment);
    for (const [name, service] of gateways) {
      assert.equal(JSON.stringify(service.environment), first, `${name} differs`);
      const environment = environmentOfService(service);
      for (const variable of Object.keys(environment))
        assert.ok(KNOWN_VARIABLES.has(variable), `${variable} is not a setting of the gateway`);
      const config = loadConfig(environment);
      assert.equal(config.database.kind, 'postgres');
      assert.equal(config.storage.kind, 's3');
      assert.ok(config.admission.redisUrl !== undefined);
    }
  });

  it('points the gateways at the PostgreSQL, Redis and MinIO it runs, with their credentials', () => {
    const config = loadConfig(environmentOfService(gateways[0]?.[1] ?? {}));
    assert.equal(config.database.kind, 'postgres');
    const database = new URL(config.database.kind === 'postgres' ? config.database.url : '');
    const postgres = services[database.hostname]?.environment ?? {};
    assert.equal(database.port, '5432');
    assert.equal(database.username, postgres.POSTGRES_USER);
    assert.equal(database.password, postgres.POSTGRES_PASSWORD);
    assert.equal(database.pathname, `/${postgres.POSTGRES_DB}`);

    assert.ok(services[new URL(config.admission.redisUrl ?? '').hostname], 'the Redis service');

    assert.equal(config.storage.kind, 's3');
    if (config.storage.kind !== 's3') return;
    const endpoint = new URL(config.storage.endpoint ?? '');
    const minio = services[endpoint.hostname]?.environment ?? {};
    assert.equal(config.storage.accessKeyId, minio.MINIO_ROOT_USER);
    assert.equal(config.storage.secretAccessKey, minio.MINIO_ROOT_PASSWORD);
    assert.equal(config.storage.forcePathStyle, true);
    const bucketCommand = services['minio-bucket']?.entrypoint?.join(' ') ?? '';
    assert.ok(
      bucketCommand.includes(
        `${endpoint.origin} ${minio.MINIO_ROOT_USER} ${minio.MINIO_ROOT_PASSWORD}`,
      ),
      bucketCommand,
    );
    assert.ok(bucketCommand.endsWith(`/${config.storage.bucket}`), bucketCommand);
  });

  it('puts nginx in front of every gateway, on the port the image URLs name', () => {
    const upstreams = [...nginx.matchAll(/^\s*server\s+([\w-]+):(\d+);/gm)].map(
      (match) => `${match[1]}:${match[2]}`,
    );
    const expected = gateways.map(
      ([name, service]) => `${name}:${loadConfig(environmentOfService(service)).port}`,
    );
    assert.deepEqual(upstreams.sort(), expected.sort());
    const config = loadConfig(environmentOfService(gateways[0]?.[1] ?? {}));
    const published = services.proxy?.ports?.[0]?.split(':')[0];
    assert.equal(published, new URL(config.publicBaseUrl).port);
    assert.match(nginx, /^\s*listen\s+(\d+);/m);
    assert.equal(services.proxy?.ports?.[0]?.split(':')[1], /listen\s+(\d+);/.exec(nginx)?.[1]);
    // Event streams must not wait in nginx's buffers, and bodies up to the gateway's own limit pass.
    assert.match(nginx, /proxy_buffering off;/);
    const bodyLimitMiB = Number(/client_max_body_size (\d+)m;/.exec(nginx)?.[1]);
    assert.equal(bodyLimitMiB * 1024 * 1024, config.maxBodyBytes);
  });

  it('checks health on routes the gateway serves, and waits out its drain on stop', () => {
    for (const [name, service] of gateways) {
      const test = service.healthcheck?.test.join(' ') ?? '';
      const path = /http:\/\/127\.0\.0\.1:\d+(\/\w+)/.exec(test)?.[1];
      assert.ok(path !== undefined && HEALTH_PATHS.includes(path), `${name}: ${test}`);
      const graceSeconds = Number(/^(\d+)s$/.exec(service.stop_grace_period ?? '')?.[1]);
      const config = loadConfig(environmentOfService(service));
      assert.ok(graceSeconds * 1000 > config.shutdownTimeoutMs, `${name}: grace ${graceSeconds}s`);
    }
  });

  it('starts one gateway on the empty database before the others (migrations)', () => {
    const [first, ...rest] = gateways;
    assert.ok(first !== undefined);
    assert.ok(first[1].depends_on?.postgres !== undefined);
    for (const [name, service] of rest)
      assert.equal(service.depends_on?.[first[0]]?.condition, 'service_healthy', name);
  });
});
