import { useState } from 'preact/hooks';

interface SignInProps {
  busy: boolean;
  problem: string | undefined;
  onSignIn: (token: string) => void;
}

export function SignIn({ busy, problem, onSignIn }: SignInProps) {
  const [token, setToken] = useState('');
  return (
    <main class="sign-in">
      <form
        class="card"
        onSubmit={(event) => {
          event.preventDefault();
          const trimmed = token.trim().replace(/^Bearer\s+/i, '');
          if (trimmed !== '') onSignIn(trimmed);
        }}
      >
        <h1>imagegate console</h1>
        <p class="hint">
          Paste a gateway token. No token yet? On the gateway's machine run{' '}
          <code>npx imagegate token create --name me --admin</code> and copy the token it prints.
        </p>
        <label for="token">Token</label>
        <textarea
          id="token"
          name="token"
          rows={4}
          autocomplete="off"
          spellcheck={false}
          value={token}
          onInput={(event) => setToken(event.currentTarget.value)}
        />
        <p class="hint">Kept in this tab only (sessionStorage); closing the tab signs you out.</p>
        {problem !== undefined && (
          <p class="error" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
