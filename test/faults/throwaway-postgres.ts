import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../helpers/free-port.js';
import { SERVICES_REQUIRED } from '../helpers/postgres.js';

const run = promisify(execFile);
const POSTGRES_ROOT = '/usr/lib/postgresql';
/** initdb refuses to run as root; the cluster then belongs to this user. */
const CLUSTER_USER = 'postgres';

/**
 * A PostgreSQL cluster of the test's own, on a free loopback port and a temporary data directory,
 * that the test may stop, start, freeze and thaw without touching the machine's shared server.
 */
export interface ThrowawayPostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  /** `pg_ctl stop -m fast`: the server ends every connection and exits. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP to the postmaster and every backend: connections stay open, nothing answers. */
  freeze(): Promise<void>;
  thaw(): Promise<void>;
}

async function findBinaries(): Promise<string | undefined> {
  if (!existsSync(POSTGRES_ROOT)) return undefined;
  const versions = (await readdir(POSTGRES_ROOT))
    .filter((entry) => existsSync(path.join(POSTGRES_ROOT, entry, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(POSTGRES_ROOT, versions[0], 'bin');
}

/** The process ids of `root` and all its descendants, read from /proc. */
async function processTree(root: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // The command name may hold spaces; the fields after its closing parenthesis do not.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(entry), Number(fields[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const tree = [root];
  for (let index = 0; index < tree.length; index++)
    for (const [pid, parent] of parents) if (parent === tree[index]) tree.push(pid);
  return tree;
}

/**
 * Creates and starts a throwaway cluster, destroyed when the test ends (thawed, stopped
 * immediately, its directory removed). Skips the test with a message when PostgreSQL's server
 * programs are not installed, or fails it when services are required.
 */
export async function throwawayPostgres(t: TestContext): Promise<ThrowawayPostgres | undefined> {
  const bin = await findBinaries();
  if (bin === undefined) {
    const problem = `no PostgreSQL server programs (initdb, pg_ctl) under ${POSTGRES_ROOT}`;
    if (SERVICES_REQUIRED)
      throw new Error(
        `a throwaway PostgreSQL is required (IMAGEGATE_REQUIRE_SERVICES=1): ${problem}`,
      );
    t.skip(`SKIPPED: ${problem}`);
    return undefined;
  }
  const asRoot = userInfo().uid === 0;
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-pg-'));
  const dataDir = path.join(directory, 'data');
  const socketDir = path.join(directory, 'socket');
  const logFile = path.join(directory, 'server.log');
  await mkdir(socketDir);
  if (asRoot) {
    const { stdout } = await run('id', ['-u', CLUSTER_USER]);
    const { stdout: group } = await run('id', ['-g', CLUSTER_USER]);
    const [uid, gid] = [Number(stdout.trim()), Number(group.trim())];
    await Promise.all([directory, socketDir].map((dir) => chown(dir, uid, gid)));
  }
  const tool = (name: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', CLUSTER_USER, '--', path.join(bin, name), ...args])
      : run(path.join(bin, name), args);
  const port = await freePort();
  const serverOptions = [
    `-k ${socketDir}`,
    `-p ${port}`,
    "-c listen_addresses='127.0.0.1'",
    '-c fsync=off',
    '-c max_connections=60',
  ].join(' ');

  let running = false;
  let frozen = false;
  const postmasterPid = async () =>
    Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const signalTree = async (signal: NodeJS.Signals) => {
    for (const pid of await processTree(await postmasterPid())) {
      try {
        process.kill(pid, signal);
      } catch {
        // Already gone.
      }
    }
  };
  const cluster: ThrowawayPostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: async () => {
      await tool('pg_ctl', ['-D', dataDir, '-o', serverOptions, '-l', logFile, '-w', 'start']);
      running = true;
    },
    stop: async () => {
      await tool('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
      running = false;
    },
    freeze: async () => {
      frozen = true;
      await signalTree('SIGSTOP');
    },
    thaw: async () => {
      await signalTree('SIGCONT');
      frozen = false;
    },
  };
  t.after(async () => {
    if (frozen) await cluster.thaw().catch(() => undefined);
    if (running)
      await tool('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    await rm(directory, { recursive: true, force: true });
  });
  await tool('initdb', ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  await cluster.start();
  return cluster;
}
