import { Problems, TableHead } from './page-parts';
import { useState } from 'preact/hooks';
import { api, authorization, errorOf, messageOf } from '../api';
import { UsageChart } from './usage-chart';
import { type GroupKey, perDay, unbalanced, type UsageRecord } from './usage-rows';
import { usePolled } from './use-polled';

const ROWS = 1000;

/** Images and cost per day as charts, the ledger rows as a filterable table, CSV, and balance. */
export function UsagePage({ admin }: { admin: boolean }) {
  const path = admin ? '/admin/usage' : '/me/usage';
  const usage = usePolled(() => api<{ rows: UsageRecord[] }>(`${path}?limit=${ROWS}`));
  const [groupBy, setGroupBy] = useState<GroupKey>('model');
  const [filter, setFilter] = useState('');
  const [onlyUnbalanced, setOnlyUnbalanced] = useState(false);
  const [problem, setProblem] = useState<string | undefined>();
  const rows = usage.value?.rows ?? [];
  const days = perDay(rows, groupBy);
  const shown = rows.filter(
    (row) =>
      (!onlyUnbalanced || unbalanced(row) !== undefined) &&
      (filter === '' || JSON.stringify(row).toLowerCase().includes(filter.toLowerCase())),
  );

  async function downloadCsv(): Promise<void> {
    try {
      const response = await fetch(`${path}?limit=${ROWS}&format=csv`, {
        headers: authorization(),
      });
      if (!response.ok) throw await errorOf(response);
      const link = document.createElement('a');
      link.href = URL.createObjectURL(await response.blob());
      link.download = 'imagegate-usage.csv';
      link.click();
      URL.revokeObjectURL(link.href);
    } catch (error) {
      setProblem(messageOf(error));
    }
  }

  return (
    <section class="page">
      <h1>Usage</h1>
      <Problems texts={[usage.problem, problem]} />
      <div class="row">
        <label for="group-by">Charts by</label>
        <select
          id="group-by"
          value={groupBy}
          onChange={(event) => setGroupBy(event.currentTarget.value as GroupKey)}
        >
          <option value="model">model</option>
          <option value="token_id">token</option>
          <option value="account">account</option>
        </select>
        <button type="button" onClick={() => void downloadCsv()}>
          Export CSV
        </button>
        <button type="button" onClick={usage.refresh}>
          Refresh
        </button>
      </div>
      <div class="charts">
        <UsageChart title="Images billed per day" days={days} measure="images" />
        <UsageChart title="Cost per day" days={days} measure="cost" />
      </div>
      <div class="row">
        <label for="usage-filter">Filter rows</label>
        <input
          id="usage-filter"
          type="search"
          value={filter}
          onInput={(event) => setFilter(event.currentTarget.value)}
        />
        <label class="check">
          <input
            type="checkbox"
            checked={onlyUnbalanced}
            onChange={(event) => setOnlyUnbalanced(event.currentTarget.checked)}
          />
          Only rows whose books do not balance
        </label>
      </div>
      <UsageTable rows={shown} />
    </section>
  );
}

function UsageTable({ rows }: { rows: UsageRecord[] }) {
  return (
    <table data-testid="usage-rows">
      <caption>Reconciliation: reported / received / delivered / billed per request</caption>
      <TableHead
        titles={[
          'Time (UTC)',
          'Request',
          'Model',
          'Token',
          'Status',
          'Reported',
          'Received',
          'Delivered',
          'Billed',
          'Cost',
          'Balance',
        ]}
      />
      <tbody>
        {rows.map((row) => {
          const problem = unbalanced(row);
          return (
            <tr
              key={row.request_id}
              class={problem === undefined ? '' : 'unbalanced'}
              data-request-id={row.request_id}
            >
              <td>{row.time.replace('T', ' ').slice(0, 19)}</td>
              <td>
                <code>{row.request_id}</code>
              </td>
              <td>{row.model ?? '—'}</td>
              <td>{row.token_id ?? '—'}</td>
              <td>
                {row.status}
                {row.error_code === null ? '' : ` ${row.error_code}`}
              </td>
              <td>{row.images_reported ?? '—'}</td>
              <td>{row.images_received}</td>
              <td>{row.images_delivered}</td>
              <td>{row.images_billed}</td>
              <td>{row.cost}</td>
              <td>{problem === undefined ? 'ok' : <strong class="error">{problem}</strong>}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
