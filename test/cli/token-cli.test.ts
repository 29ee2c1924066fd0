import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { runInProcess, runSpawned } from './cli-runs.js';

describe('imagegate token CLI', () => {
  let dataDir: string;

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-cli-'));
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  const cli = (...args: string[]) => runInProcess({ IMAGEGATE_DATA_DIR: dataDir }, ...args);

  it('creates a token and prints only the token on stdout', async () => {
    const { code, stdout } = await cli(
      'token',
      'create',
      '--name',
      'ci',
      '--account',
      'acme',
      '--expires-in',
      '30d',
      '--admin',
    );
    assert.equal(code, 0);
    assert.match(stdout, /^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const token = stdout.trim();
    assert.equal(decodeProtectedHeader(token).alg, 'HS256');
    const claims = decodeJwt(token);
    assert.equal(claims.sub, 'acme');
    assert.match(String(claims.jti), /^tok_/);
    assert.ok(Math.abs((claims.exp as number) - (claims.iat as number) - 30 * 86_400) <= 1);
  });

  it('keeps the generated secret with mode 0600', async () => {
    const info = await stat(path.join(dataDir, 'secret'));
    assert.equal(info.mode & 0o777, 0o600);
  });

  it('lists tokens as a table and as JSON, and revokes by id', async () => {
    const created = await cli('token', 'create', '--name', 'to-revoke');
    const id = String(decodeJwt(created.stdout.trim()).jti);
    const table = await cli('token', 'list');
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^ID\s+NAME\s+ACCOUNT/);
    assert.match(table.stdout, new RegExp(`${id}\\s+to-revoke\\s+default`));
    const revoked = await cli('token', 'revoke', id);
    assert.equal(revoked.code, 0);
    assert.equal(revoked.stdout, `revoked ${id}\n`);
    const listed = JSON.parse((await cli('token', 'list', '--json')).stdout) as {
      id: string;
      status: string;
      admin: boolean;
    }[];
    assert.equal(listed.find((token) => token.id === id)?.status, 'revoked');
    assert.equal(listed.find((token) => token.status === 'active')?.admin, true);
  });

  it('exits 2 with usage on mistakes, saying what is wrong', async () => {
    const cases: [string[], RegExp][] = [
      [['token', 'create'], /--name is required/],
      [['token', 'create', '--name', 'x', '--expires-in', 'soon'], /--expires-in must look like/],
      [['token', 'create', '--name', 'x', '--bogus'], /Unknown option '--bogus'/],
      [['token', 'revoke'], /exactly one token ID/],
      [['token', 'revoke', 'tok_missing'], /no token with ID tok_missing/],
      [['token', 'frobnicate'], /unknown action "frobnicate"/],
      [['launch'], /unknown command "launch"/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(...args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
    }
  });

  it('refuses a name or an account the database cannot hold, naming it, and exits 1', async () => {
    const cases: [string[], RegExp][] = [
      [['--name', 'n'.repeat(201)], /name: must be at most 200 characters/],
      [['--name', 'tab\there'], /name: must not hold a control character/],
      [['--name', 'x', '--account', 'a'.repeat(201)], /account: must be at most 200 characters/],
    ];
    for (const [args, message] of cases) {
      const result = await cli('token', 'create', ...args);
      assert.equal(result.code, 1, args.join(' '));
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
    }
    const longest = await cli(
      'token',
      'create',
      '--name',
      'n'.repeat(200),
      '--account',
      'a'.repeat(200),
    );
    assert.equal(longest.code, 0, longest.stderr);
  });

  it('reports every configuration problem at once and exits 1', async () => {
    const { stderr, code } = await runInProcess(
      {
        IMAGEGATE_DATA_DIR: dataDir,
        IMAGEGATE_TOKEN_CACHE_MS: 'often',
        IMAGEGATE_LOG_LEVEL: 'loud',
      },
      'token',
      'list',
    );
    assert.equal(code, 1);
    assert.match(stderr, /IMAGEGATE_TOKEN_CACHE_MS must be an integer/);
    assert.match(stderr, /IMAGEGATE_LOG_LEVEL must be one of/);
  });

  it('runs as its own process: arguments and environment in, output and exit code out', async () => {
    const [created, misconfigured] = await Promise.all([
      runSpawned(
        { ...process.env, IMAGEGATE_DATA_DIR: dataDir, IMAGEGATE_DATABASE_URL: '' },
        'token',
        'create',
        '--name',
        'spawned',
      ),
      runSpawned(
        { ...process.env, IMAGEGATE_DATA_DIR: dataDir, IMAGEGATE_TOKEN_CACHE_MS: 'often' },
        'token',
        'list',
      ),
    ]);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^[\w-]+\.[\w-]+\.[\w-]+\n$/, 'only the token on stdout');
    assert.equal(decodeJwt(created.stdout.trim()).sub, 'default');
    assert.equal(misconfigured.code, 1);
    assert.equal(misconfigured.stdout, '');
    assert.match(misconfigured.stderr, /IMAGEGATE_TOKEN_CACHE_MS must be an integer/);
  });
});
