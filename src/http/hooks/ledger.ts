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

/** A request of an accounted scope as it arrived: its row's id and arrival, and its scope. */
interface Opened {
  rowId: string;
  receivedAt: number;
  scope: LedgerScope;
}

/** The row a request ended with; null for one that has none (never authenticated). */
type EndedRow = UsageRow | null;

const opened = new WeakMap<FastifyRequest, Opened>();
/** Work under way for a request: its end waits for it, then reads the outcome recorded. */
const working = new WeakMap<FastifyRequest, Promise<unknown>>();
/** The outcome each request's work came to, once known. */
const known = new WeakMap<FastifyRequest, GenerationOutcome>();
/** The row each request ended with, or the promise of it while its work is still under way. */
const ended = new WeakMap<FastifyRequest, EndedRow | Promise<EndedRow>>();

/** What one accounted scope writes its requests' rows with. */
class LedgerScope {
  private readonly modelNamedBy: (request: FastifyRequest) => unknown;

  constructor(readonly options: LedgerHooksOptions) {
    this.modelNamedBy =
      options.modelNamedBy ??
      ((request: FastifyRequest) => (request.body as { model?: unknown } | null)?.model);
  }

  /** The request's row, written unless the billing wrote it; at once when its work is over. */
  end(
    request: FastifyRequest,
    reply: FastifyReply,
    callerLeft: boolean,
  ): EndedRow | Promise<EndedRow> {
    if (request.principal === undefined) return null;
    const outcome = outcomeWhenSettled(request);
    if (outcome instanceof Promise)
      return outcome.then((settled) => this.rowOf(request, reply, callerLeft, settled));
    return this.rowOf(request, reply, callerLeft, outcome);
  }

  private rowOf(
    request: FastifyRequest,
    reply: FastifyReply,
    callerLeft: boolean,
    settled: GenerationOutcome | undefined,
  ): UsageRow {
    const outcome = settled ?? emptyOutcome(describeRefused(this.modelNamedBy(request)));
    // Written with the billing: it stands, whatever became of the caller afterwards.
    if (outcome.recorded !== undefined && outcome.recorded !== 'task') return outcome.recorded;
    const answered = answeredError(request);
    const row = usageRowOf(rowLabelsOf(request), outcome, {
      status: callerLeft
        ? LEDGER_CODES.CallerGone.status
        : (outcome.status ?? answered?.status ?? reply.statusCode),
      code: callerLeft ? 'CallerGone' : (outcome.code ?? answered?.code),
      endedAt: this.options.now(),
    });
    // A task submission's row is written when its task ends; this one only reports it.
    if (outcome.recorded !== 'task') this.options.ledger.record(row);
    return row;
  }
}

/**
 * Opens a request's row when it arrives and, once the request is over (answered, or left by its
 * caller) and its work has come to an outcome, writes that row, unless it was written already
 * with the billing: every authenticated request gets exactly one row, built once, from its labels
 * and its outcome.
 */
export function addLedgerHooks(scope: FastifyInstance, options: LedgerHooksOptions): void {
  const ledgerScope = new LedgerScope(options);

  scope.addHook('onRequest', (request, reply, done) => {
    opened.set(request, {
      rowId: timeOrderedUuid(),
      receivedAt: options.now(),
      scope: ledgerScope,
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
    frontDoor: entry.scope.options.frontDoorOf(request),
    workspace: workspaceOf(request),
  };
}

/**
 * Work under way for the request: its end waits for it, and then reads the outcome the work
 * recorded (`recordOutcome`). Later work (an answer billed once handed over) replaces earlier.
 */
export function followWork(request: FastifyRequest, work: Promise<unknown>): void {
  working.set(request, work);
  known.delete(request);
}

/** What the request's work came to, known now. */
export function recordOutcome(request: FastifyRequest, outcome: GenerationOutcome): void {
  working.delete(request);
  known.set(request, outcome);
}

/** Work under way for the request that resolves to its outcome, recorded once it does. */
export function followOutcome(request: FastifyRequest, outcome: Promise<GenerationOutcome>): void {
  followWork(request, outcome);
  void outcome.then((value) => {
    if (working.get(request) === outcome) recordOutcome(request, value);
  });
}

/** The outcome a request's work came to so far; undefined while it runs, or without work. */
export function outcomeSoFar(request: FastifyRequest): GenerationOutcome | undefined {
  return known.get(request);
}

/**
 * The outcome a request's work comes to: at once when no work is under way, else once the last
 * work followed is over.
 */
export function outcomeWhenSettled(
  request: FastifyRequest,
): GenerationOutcome | undefined | Promise<GenerationOutcome | undefined> {
  const work = working.get(request);
  if (work === undefined) return known.get(request);
  return afterWork(request, work);
}

async function afterWork(
  request: FastifyRequest,
  first: Promise<unknown>,
): Promise<GenerationOutcome | undefined> {
  let work: Promise<unknown> | undefined = first;
  while (work !== undefined) {
    await work.catch(() => undefined);
    const next = working.get(request);
    // The work recorded its outcome (or left none), unless later work took its place.
    work = next === work ? undefined : next;
  }
  return known.get(request);
}

/**
 * Ends a request of an accounted scope: its row, once its work is over, written unless the
 * billing wrote it; the same row to every caller (null when it has none). Undefined for a
 * request outside such a scope.
 */
export function endOfRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  callerLeft: boolean,
): EndedRow | Promise<EndedRow> | undefined {
  const entry = opened.get(request);
  if (entry === undefined) return undefined;
  let row = ended.get(request);
  if (row === undefined) {
    row = entry.scope.end(request, reply, callerLeft);
    ended.set(request, row);
  }
  return row;
}
