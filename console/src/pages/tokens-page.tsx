import { Problems, TableHead } from './page-parts';
import { useState } from 'preact/hooks';
import { api, messageOf } from '../api';
import { usePolled } from './use-polled';

/** A token as the admin API shows it (never its JWT). */
interface TokenView {
  id: string;
  name: string;
  account: string;
  admin: boolean;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  limits: Record<string, number | string[] | null>;
  images_used: number;
}

const LIMITS = [
  'image_quota',
  'rpm',
  'concurrency',
  'pending_tasks',
  'upload_mb',
  'upload_files',
] as const;

/** Tokens (admin): create (the JWT shown once), list, revoke, and set limits. */
export function TokensPage() {
  const tokens = usePolled(() => api<{ tokens: TokenView[] }>('/admin/tokens?limit=100'));
  const [created, setCreated] = useState<string | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const act = async (work: () => Promise<unknown>) => {
    setProblem(undefined);
    try {
      await work();
      tokens.refresh();
    } catch (error) {
      setProblem(messageOf(error));
    }
  };
  return (
    <section class="page">
      <h1>Tokens</h1>
      <Problems texts={[tokens.problem, problem]} />
      <CreateToken
        onCreate={(body) =>
          void act(async () =>
            setCreated((await api<{ token: string }>('/admin/tokens', { body })).token),
          )
        }
      />
      {created !== undefined && (
        <div class="card created" role="status">
          <p>The new token, shown only now:</p>
          <pre data-testid="new-token">
            <code>{created}</code>
          </pre>
          <button type="button" onClick={() => void navigator.clipboard.writeText(created)}>
            Copy
          </button>
        </div>
      )}
      <table data-testid="tokens">
        <TableHead
          titles={[
            'Name',
            'Account',
            'Admin',
            'Created',
            'Expires',
            'Images used',
            'Limits',
            'Actions',
          ]}
        />
        <tbody>
          {(tokens.value?.tokens ?? []).map((token) => (
            <tr key={token.id} class={token.revoked_at === null ? '' : 'revoked'}>
              <th scope="row">{token.name}</th>
              <td>{token.account}</td>
              <td>{token.admin ? 'yes' : 'no'}</td>
              <td>{token.created_at.slice(0, 10)}</td>
              <td>
                {token.revoked_at !== null
                  ? `revoked ${token.revoked_at.slice(0, 10)}`
                  : (token.expires_at?.slice(0, 10) ?? 'never')}
              </td>
              <td>{token.images_used}</td>
              <td>
                <LimitsEditor
                  token={token}
                  onSave={(limits) =>
                    void act(() =>
                      api(`/admin/tokens/${token.id}`, { method: 'PATCH', body: { limits } }),
                    )
                  }
                />
              </td>
              <td>
                {token.revoked_at === null && (
                  <button
                    type="button"
                    onClick={() =>
                      void act(() => api(`/admin/tokens/${token.id}/revoke`, { method: 'POST' }))
                    }
                  >
                    Revoke {token.name}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function CreateToken({ onCreate }: { onCreate: (body: Record<string, unknown>) => void }) {
  const [name, setName] = useState('');
  const [account, setAccount] = useState('');
  const [admin, setAdmin] = useState(false);
  const [expires, setExpires] = useState('');
  return (
    <form
      class="card row"
      aria-label="Create a token"
      onSubmit={(event) => {
        event.preventDefault();
        onCreate({
          name,
          ...(account === '' ? {} : { account }),
          ...(admin ? { admin } : {}),
          ...(expires === '' ? {} : { expires_in: expires }),
        });
      }}
    >
      <label for="token-name">Name</label>
      <input
        id="token-name"
        required
        value={name}
        onInput={(event) => setName(event.currentTarget.value)}
      />
      <label for="token-account">Account</label>
      <input
        id="token-account"
        value={account}
        onInput={(event) => setAccount(event.currentTarget.value)}
      />
      <label for="token-expires">Expires in</label>
      <input
        id="token-expires"
        placeholder="30d"
        value={expires}
        onInput={(event) => setExpires(event.currentTarget.value)}
      />
      <label class="check">
        <input
          type="checkbox"
          checked={admin}
          onChange={(event) => setAdmin(event.currentTarget.checked)}
        />{' '}
        Admin
      </label>
      <button type="submit" class="primary">
        Create token
      </button>
    </form>
  );
}

function LimitsEditor({
  token,
  onSave,
}: {
  token: TokenView;
  onSave: (limits: Record<string, number | null>) => void;
}) {
  const [values, setValues] = useState<Record<string, string>>(
    Object.fromEntries(
      LIMITS.map((key) => [key, token.limits[key] == null ? '' : String(token.limits[key])]),
    ),
  );
  return (
    <details>
      <summary>
        {LIMITS.filter((key) => token.limits[key] != null)
          .map((key) => `${key} ${String(token.limits[key])}`)
          .join(', ') || 'defaults'}
      </summary>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          onSave(
            Object.fromEntries(
              LIMITS.map((key) => [key, values[key] === '' ? null : Number(values[key])]),
            ),
          );
        }}
      >
        {LIMITS.map((key) => (
          <label key={key} class="field">
            {key}
            <input
              inputMode="numeric"
              placeholder="default"
              value={values[key]}
              onInput={(event) => setValues({ ...values, [key]: event.currentTarget.value })}
            />
          </label>
        ))}
        <button type="submit">Save limits</button>
      </form>
    </details>
  );
}
