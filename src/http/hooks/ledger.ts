import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UsageRow } from '../../domain/usage-row.js';
import { LEDGER_CODES } from '../../errors/error-table.js';
import {
  describeRefused,
  emptyOutcome,
  type GenerationOutcome,
} from '../../ledger/generation-outcome.js';
import type { LedgerWriter } from '../../ledger/ledger-writer.js';
import type { RowLabels } from '../../ledger/row-labels.js';
import { usageRowOf } from '../../ledger/usage-row-of.js';
import { timeOrderedUuid } from '../../support/time-ordered-id.js';
import { answerFinished } from '../answer-finished.js';
import { answeredError } from '../error-reply.js';
import { whenClosed } from '../when-closed.js';
import { workspaceOf } from './workspace.js';

export interface LedgerHooksOptions {
  ledger: LedgerWriter;
  now: () => number;
  /** The front door a request of the scope came in by, as its row names it. */
  frontDoorOf: (request: FastifyRequest) => string;
  /** The model a request refused before validation names, read from its body. */
  modelNamedBy?: ((request: FastifyRequest) => unknown) | undefined;
}

/** A request of an accounted scope as it arrived: its row's id and arrival, and its scope's door. */
interface Opened {
  rowId: string;
  receivedAt: number;
  frontDoorOf: (request: FastifyRequest) => string;
  /** Writes the request's row once its work is over, the first time it is called. */
  end: (reply: FastifyReply, callerLeft: boolean) => Promise<UsageRow | undefined>;
}

const opened = new WeakMap<FastifyRequest, Opened>();
/** The outcome each request's work will come to, the latest one followed. */
const pending = new WeakMap<FastifyRequest, Promise<GenerationOutcome>>();
/** The outcome each request's work came to, once known. */
const known = new WeakMap<FastifyRequest, GenerationOutcome>();
/** The row each request ended with, once its work was over. */
const ended = new WeakMap<FastifyRequest, Promise<UsageRow | undefined>>();

/**
 * Opens a request's row when it arrives and, once the request is over (answered, or left by its
 * caller) and its work has come to an outcome, writes that row, unless it was written already
 * with the billing: every authenticated request gets exactly one row, built once, from its labels
 * and its outcome.
 */
export function addLedgerHooks(scope: FastifyInstance, options: LedgerHooksOptions): void {
  const modelNamedBy =
    options.modelNamedBy ??
    ((request: FastifyRequest) => (request.body as { model?: unknown } | null)?.model);

  scope.addHook('onRequest', (request, reply, done) => {
    opened.set(request, {
      rowId: timeOrderedUuid(),
      receivedAt: options.now(),
      frontDoorOf: options.frontDoorOf,
      end: (endedReply, callerLeft) => {
        let row = ended.get(request);
        if (row === undefined) {
          row =
            request.principal === undefined
              ? Promise.resolve(undefined)
              : rowAtTheEnd(request, endedReply, callerLeft);
          ended.set(request, row);
        }
        return row;
      },
    });
    // A caller who leaves early may never see onResponse; the connection's close always comes
    // (or came during authentication, which runs before this hook).
    whenClosed(reply, () => {
      if (!answerFinished(reply.raw)) void endOfRequest(request, reply, true);
    });
    done();
  });

  scope.addHook('onResponse', (request, reply, done) => {
    void endOfRequest(request, reply, false);
    done();
  });

  const rowAtTheEnd = async (
    request: FastifyRequest,
    reply: FastifyReply,
    callerLeft: boolean,
  ): Promise<UsageRow | undefined> => {
    const outcome =
      (await outcomeWhenSettled(request)) ?? emptyOutcome(describeRefused(modelNamedBy(request)));
    // Written with the billing: it stands, whatever became of the caller afterwards.
    if (outcome.recorded !== undefined && outcome.recorded !== 'task') return outcome.recorded;
    const answered = answeredError(request);
    const row = usageRowOf(rowLabelsOf(request), outcome, {
      status: callerLeft
        ? LEDGER_CODES.CallerGone.status
        : (outcome.status ?? answered?.status ?? reply.statusCode),
      code: callerLeft ? 'CallerGone' : (outcome.code ?? answered?.code),
      endedAt: options.now(),
    });
    // A task submission's row is written when its task ends; this one only reports it.
    if (outcome.recorded !== 'task') options.ledger.record(row);
    return row;
  };
}

/** The labels of a request's row; a request outside an accounted scope is a wiring bug (a 500). */
export function rowLabelsOf(request: FastifyRequest): RowLabels {
  const entry = opened.get(request);
  const principal = request.principal;
  if (entry === undefined || principal === undefined)
    throw new Error('route is not in an accounted scope');
  return {
    rowId: entry.rowId,
    requestId: request.id,
    receivedAt: entry.receivedAt,
    tokenId: principal.tokenId,
    account: principal.account,
    frontDoor: entry.frontDoorOf(request),
    workspace: workspaceOf(request),
  };
}

/**
 * Follows the work of a request to its outcome: the row, the log line and the metrics wait for
 * it. A later call (an answer billed once handed over) replaces an earlier one.
 */
export function followOutcome(request: FastifyRequest, outcome: Promise<GenerationOutcome>): void {
  pending.set(request, outcome);
  void outcome.then((value) => {
    if (pending.get(request) === outcome) known.set(request, value);
  });
}

/** The outcome a request's work came to so far; undefined while it runs, or without work. */
export function outcomeSoFar(request: FastifyRequest): GenerationOutcome | undefined {
  return known.get(request);
}

/** The outcome a request's work comes to, once the last work followed is over. */
export async function outcomeWhenSettled(
  request: FastifyRequest,
): Promise<GenerationOutcome | undefined> {
  for (;;) {
    const outcome = pending.get(request);
    if (outcome === undefined) return undefined;
    const value = await outcome;
    if (pending.get(request) === outcome) return value;
  }
}

/**
 * Ends a request of an accounted scope: its row, once its work is over, written unless the
 * billing wrote it; the same row to every caller. Undefined for a request outside such a scope.
 */
export function endOfRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  callerLeft: boolean,
): Promise<UsageRow | undefined> | undefined {
  return opened.get(request)?.end(reply, callerLeft);
}
