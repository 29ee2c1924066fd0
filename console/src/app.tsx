import { useEffect, useState } from 'preact/hooks';
import { messageOf } from './api';
import { ChannelsPage } from './pages/channels-page';
import { Playground } from './playground/playground';
import { forgetToken, storedToken, storeToken } from './session';
import { SignIn } from './sign-in';
import { TasksPage } from './pages/tasks-page';
import { TokensPage } from './pages/tokens-page';
import { UsagePage } from './pages/usage-page';
import { type Identity, whoAmI } from './who-am-i';

interface Page {
  id: string;
  title: string;
  adminOnly: boolean;
  render: (identity: Identity) => preact.JSX.Element;
}

const PAGES: readonly Page[] = [
  { id: 'playground', title: 'Playground', adminOnly: false, render: () => <Playground /> },
  { id: 'tasks', title: 'Tasks', adminOnly: false, render: () => <TasksPage /> },
  {
    id: 'usage',
    title: 'Usage',
    adminOnly: false,
    render: (who) => <UsagePage admin={who.admin} />,
  },
  { id: 'channels', title: 'Channels', adminOnly: true, render: () => <ChannelsPage /> },
  { id: 'tokens', title: 'Tokens', adminOnly: true, render: () => <TokensPage /> },
];

function pageFromHash(): string {
  return location.hash.replace(/^#\/?/, '') || 'playground';
}

export function App() {
  const [identity, setIdentity] = useState<Identity | undefined>(undefined);
  const [checking, setChecking] = useState(storedToken() !== undefined);
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [pageId, setPageId] = useState(pageFromHash());

  useEffect(() => {
    const onHash = () => setPageId(pageFromHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    const token = storedToken();
    if (token !== undefined) void signIn(token);
  }, []);

  async function signIn(token: string): Promise<void> {
    setChecking(true);
    setProblem(undefined);
    try {
      setIdentity(await whoAmI(token));
      storeToken(token);
    } catch (error) {
      forgetToken();
      setProblem(messageOf(error));
    } finally {
      setChecking(false);
    }
  }
  function signOut(): void {
    forgetToken();
    setIdentity(undefined);
  }

  if (identity === undefined)
    return <SignIn busy={checking} problem={problem} onSignIn={(token) => void signIn(token)} />;
  const pages = PAGES.filter((page) => identity.admin || !page.adminOnly);
  const page = pages.find((candidate) => candidate.id === pageId) ?? pages[0];
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">imagegate</span>
        <nav aria-label="Pages">
          {pages.map((candidate) => (
            <a
              key={candidate.id}
              href={`#/${candidate.id}`}
              aria-current={candidate === page ? 'page' : undefined}
            >
              {candidate.title}
            </a>
          ))}
          <a href="/docs">API reference</a>
        </nav>
        <span class="who">
          {identity.name}
          {identity.admin ? ' (admin)' : ''}
          <button type="button" class="link" onClick={signOut}>
            Sign out
          </button>
        </span>
      </header>
      <main id="main">{page?.render(identity)}</main>
    </div>
  );
}
