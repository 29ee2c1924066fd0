import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Children, hasExited } from './proxy-children.js';
import { childPids } from './proxy-proc.js';

const NGINX = '/usr/sbin/nginx';
const START_TIMEOUT_MS = 10_000;

export interface RunningNginx {
  url: string;
  /** The one worker process, whose CPU is what nginx spends on requests. */
  workerPid: number;
  stop(): Promise<void>;
}

/**
 * nginx as the reference proxy: one worker, `proxy_pass` to the upstream over kept-alive
 * connections, no access log, everything in a temporary prefix. Undefined when not installed.
 */
export async function startNginx(
  children: Children,
  upstreamPort: number,
): Promise<RunningNginx | undefined> {
  if (!existsSync(NGINX)) return undefined;
  const prefix = await mkdtemp(path.join(tmpdir(), 'imagegate-proxy-nginx-'));
  const port = await freePort();
  const config = path.join(prefix, 'nginx.conf');
  await writeFile(config, nginxConfig(prefix, port, upstreamPort));
  const master = children.spawn(
    NGINX,
    ['-p', prefix, '-c', config, '-e', path.join(prefix, 'error.log'), '-g', 'daemon off;'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const stop = async () => {
    await children.stop(master);
    await rm(prefix, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, () => hasExited(master));
    const workerPid = await workerOf(master.pid as number);
    return { url: `http://127.0.0.1:${port}`, workerPid, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function nginxConfig(prefix: string, port: number, upstreamPort: number): string {
  const temp = (name: string) => path.join(prefix, name);
  return `worker_processes 1;
pid ${temp('nginx.pid')};
error_log ${temp('error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${temp('client_body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  client_max_body_size 0;
  upstream fake {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      proxy_pass http://fake;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitForPort(port: number, exited: () => boolean): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (exited()) throw new Error('nginx exited before listening (see its error above)');
    if (Date.now() > deadline)
      throw new Error(`nginx did not listen within ${START_TIMEOUT_MS} ms`);
    await sleep(50);
  }
}

async function workerOf(masterPid: number): Promise<number> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const [worker] = childPids(masterPid);
    if (worker !== undefined) return worker;
    if (Date.now() > deadline) throw new Error('nginx started no worker');
    await sleep(50);
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
