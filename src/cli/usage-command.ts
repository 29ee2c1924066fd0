import { parseArgs } from 'node:util';
import type { Services } from '../bootstrap/open-services.js';
import { answerRecords, columnsOf, toCsv, totalsRecord, toTable } from '../ledger/usage-format.js';
import {
  answerUsageQuery,
  readUsageQuery,
  type UsageQueryText,
  UsageQueryError,
} from '../ledger/usage-query.js';
import { SqlUsageStore } from '../store/usage-store.js';
import type { Output } from './token-command.js';
import { USAGE_USAGE } from './operator-usage.js';
import { UsageError } from './usage-error.js';

const OPTION_NAMES: Record<keyof UsageQueryText, string> = {
  since: '--since',
  until: '--until',
  token: '--token',
  account: '--account',
  requestId: '--request-id',
  groupBy: '--group-by',
  limit: '--limit',
};

/** `imagegate usage`: reads the usage ledger, as a table, CSV or JSON. */
export async function runUsageCommand(
  args: string[],
  services: Services,
  output: Output,
  now: number = Date.now(),
): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      options: {
        since: { type: 'string' },
        until: { type: 'string' },
        token: { type: 'string' },
        account: { type: 'string' },
        'request-id': { type: 'string' },
        'group-by': { type: 'string' },
        limit: { type: 'string' },
        csv: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message, `usage:\n${USAGE_USAGE}`);
  }
  if (values.csv && values.json)
    throw new UsageError('usage: give one of --csv and --json', `usage:\n${USAGE_USAGE}`);
  let query;
  try {
    query = readUsageQuery(
      {
        since: values.since,
        until: values.until,
        token: values.token,
        account: values.account,
        requestId: values['request-id'],
        groupBy: values['group-by'],
        limit: values.limit,
      },
      now,
      OPTION_NAMES,
    );
  } catch (error) {
    if (error instanceof UsageQueryError)
      throw new UsageError(`usage: ${error.message}`, `usage:\n${USAGE_USAGE}`);
    throw error;
  }
  const answer = await answerUsageQuery(new SqlUsageStore(services.database), query);
  const records = answerRecords(answer);
  const columns = columnsOf(answer);
  if (values.csv) {
    output.out(toCsv(records, columns));
    return;
  }
  const totals = totalsRecord(answer.totals);
  if (values.json) {
    output.out(
      `${JSON.stringify({ group_by: answer.grouping ?? null, [answer.grouping === undefined ? 'rows' : 'groups']: records, totals }, null, 2)}\n`,
    );
    return;
  }
  output.out(toTable(records, columns));
  output.out(
    `\ntotal: ${totals.requests} requests (${totals.succeeded} succeeded, ${totals.failed} failed), ` +
      `${totals.images_delivered} of ${totals.images_requested} images requested delivered, ${totals.images_billed} billed, cost ${totals.cost}\n`,
  );
}
