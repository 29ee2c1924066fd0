import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RequestAccount } from '../ledger/request-account.js';
import type { LedgerWriter } from '../ledger/ledger-writer.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's accounting; opened on every route of an accounted scope. */
    account: RequestAccount | undefined;
  }
}

export interface LedgerHooksOptions {
  ledger: LedgerWriter;
  now: () => number;
}

/**
 * Opens a request's accounting when it arrives and, once the answer is sent, writes the ledger
 * row of every authenticated request that settlement has not already written (refusals,
 * failures, replays). Every authenticated request gets exactly one row.
 */
export function recordUsage(scope: FastifyInstance, options: LedgerHooksOptions): void {
  scope.decorateRequest('account', undefined);

  scope.addHook('onRequest', async (request) => {
    request.account = new RequestAccount(request.id, options.now());
  });

  scope.addHook('onSend', async (request, reply, payload) => {
    const account = request.account;
    if (account === undefined) return payload;
    for (const [name, value] of Object.entries(account.responseHeaders))
      if (!reply.hasHeader(name)) reply.header(name, value);
    return payload;
  });

  const record = (request: FastifyRequest, status: number) => {
    const { account, principal } = request;
    if (account === undefined || principal === undefined || account.recorded) return;
    account.recorded = true;
    account.describeModelOf(request.body);
    options.ledger.record(
      account.toRow(principal, {
        status: account.statusFor(status),
        costMicros: 0,
        endedAt: options.now(),
      }),
    );
  };

  scope.addHook('onRequest', async (request, reply) => {
    // A caller who leaves early may never see onResponse; the connection's close always comes.
    reply.raw.once('close', () => {
      const account = request.account;
      if (reply.raw.writableFinished || account === undefined) return;
      account.callerLeft();
      void account.idle().then(() => record(request, reply.statusCode));
    });
  });

  scope.addHook('onResponse', async (request, reply) => record(request, reply.statusCode));
}

/** The accounting of a request in an accounted scope; its absence is a wiring bug (a 500). */
export function accountOf(request: FastifyRequest): RequestAccount {
  if (request.account === undefined) throw new Error('route is not in an accounted scope');
  return request.account;
}
