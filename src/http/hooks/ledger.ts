import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RequestAccount } from '../../ledger/request-account.js';
import type { LedgerWriter } from '../../ledger/ledger-writer.js';
import { whenClosed } from '../when-closed.js';

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
export function addLedgerHooks(scope: FastifyInstance, options: LedgerHooksOptions): void {
  scope.decorateRequest('account', undefined);

  scope.addHook('onRequest', (request, reply, done) => {
    request.account = new RequestAccount(request.id, options.now());
    // A caller who leaves early may never see onResponse; the connection's close always comes
    // (or came during authentication, which runs before this hook).
    whenClosed(reply, () => {
      const account = request.account;
      if (reply.raw.writableFinished || account === undefined) return;
      account.callerLeft();
      void account.idle().then(() => record(request, reply.statusCode));
    });
    done();
  });

  const record = (request: FastifyRequest, status: number) => {
    const { account, principal } = request;
    if (account === undefined || principal === undefined || account.recorded) return;
    account.describeModelOf(request.body);
    const row = account.toRow(principal, {
      status: account.statusFor(status),
      costMicros: account.partialCostMicros,
      endedAt: options.now(),
    });
    account.rowWritten(row);
    options.ledger.record(row);
  };

  scope.addHook('onResponse', (request, reply, done) => {
    const account = request.account;
    // An answer whose bill follows its hand-over is recorded by that bill, or once it failed.
    if (account?.busy === true) void account.idle().then(() => record(request, reply.statusCode));
    else record(request, reply.statusCode);
    done();
  });
}

/** The accounting of a request in an accounted scope; its absence is a wiring bug (a 500). */
export function accountOf(request: FastifyRequest): RequestAccount {
  if (request.account === undefined) throw new Error('route is not in an accounted scope');
  return request.account;
}
