import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError, invalidParameter } from '../../errors/gateway-error.js';

const WORKSPACE_HEADER = 'X-DashScope-WorkSpace';
const HEADER_KEY = 'x-dashscope-workspace';

/** Printable ASCII, as DashScope workspace ids are; the ledger column holds 64 characters. */
const WORKSPACE = /^[\x20-\x7e]{1,64}$/;

const workspaces = new WeakMap<FastifyRequest, string>();

/** The workspace a request named, checked; undefined when it named none. */
export function workspaceOf(request: FastifyRequest): string | undefined {
  return workspaces.get(request);
}

/**
 * The DashScope workspace a caller names, recorded on its ledger row. Checked right after
 * authentication, before the rate limits and the body: a malformed header costs nothing. An
 * empty header, as the SDK sends for `workspace=""`, counts as absent.
 */
export function addWorkspaceHooks(scope: FastifyInstance): void {
  scope.addHook('onRequest', (request, _reply, done) => {
    const value = request.headers[HEADER_KEY];
    if (value === undefined) return done();
    const workspace = readWorkspace(value, headerLines(request.raw.rawHeaders));
    if (workspace instanceof GatewayError) return done(workspace);
    if (workspace !== undefined) workspaces.set(request, workspace);
    done();
  });
}

/** The header's value, and on how many lines it came: two lines name two workspaces, refused. */
function readWorkspace(value: string | string[], lines: number): string | undefined | GatewayError {
  if (value === '' && lines === 1) return undefined;
  if (lines !== 1 || typeof value !== 'string' || !WORKSPACE.test(value))
    return invalidParameter(
      WORKSPACE_HEADER,
      'must be one header of at most 64 printable ASCII characters',
    );
  return value;
}

/** Node joins repeated headers into one value; the raw list still shows each line. */
function headerLines(rawHeaders: readonly string[]): number {
  let lines = 0;
  for (let index = 0; index < rawHeaders.length; index += 2)
    if (rawHeaders[index]?.toLowerCase() === HEADER_KEY) lines++;
  return lines;
}
