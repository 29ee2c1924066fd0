import { Problems, TableHead } from './page-parts';
import { api } from '../api';
import { usePolled } from './use-polled';

interface Channel {
  name: string;
  type: string;
  health: string;
  breaker: {
    state: string;
    consecutiveFailures: number;
    failureThreshold: number;
    reopensAt?: string;
  };
  stats: {
    attempts: number;
    successes: number;
    failures: number;
    inFlight: number;
    lastLatencyMs?: number;
    lastFailure?: { at: string; detail: string };
  };
}

const REFRESH_MS = 2000;

/** The running channels, refreshed live: health, breaker, latency and the last error. */
export function ChannelsPage() {
  const channels = usePolled(() => api<{ channels: Channel[] }>('/admin/channels'), REFRESH_MS);
  return (
    <section class="page">
      <h1>Channels</h1>
      <Problems texts={[channels.problem]} />
      <p class="hint">Refreshed every 2 s.</p>
      <table data-testid="channels">
        <TableHead
          titles={[
            'Channel',
            'Health',
            'Breaker',
            'Attempts / ok / failed',
            'Last latency',
            'Last error',
          ]}
        />
        <tbody>
          {(channels.value?.channels ?? []).map((channel) => (
            <tr key={channel.name} data-channel={channel.name}>
              <th scope="row">
                {channel.name} <span class="hint">{channel.type}</span>
              </th>
              <td>
                <span class={`badge ${channel.health}`} data-testid="health">
                  {channel.health}
                </span>
              </td>
              <td>
                {channel.breaker.state} ({channel.breaker.consecutiveFailures}/
                {channel.breaker.failureThreshold})
              </td>
              <td>
                {channel.stats.attempts} / {channel.stats.successes} / {channel.stats.failures}
              </td>
              <td>
                {channel.stats.lastLatencyMs === undefined
                  ? '—'
                  : `${channel.stats.lastLatencyMs} ms`}
              </td>
              <td class="detail" data-testid="last-error">
                {channel.stats.lastFailure === undefined
                  ? '—'
                  : `${channel.stats.lastFailure.at}: ${channel.stats.lastFailure.detail}`}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
