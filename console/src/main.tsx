/**
 * Hearth's console: every function live, one function's versions, traffic, charts, cold starts, log
 * and a "try it" panel, and the cluster's nodes. A single page (Preact), served by the node at
 * /console, talking to the node's public API only (./api.ts).
 */
import 'uplot/dist/uPlot.min.css';
import './style.css';

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';

import type { Catalog, Scope } from './api.js';
import { ApiError, api, apiKey } from './api.js';
import { CallablePage, FunctionPage } from './function-page.js';
import { Callable, Jobs, Nodes, Overview } from './pages.js';

function useRoute(): string {
  const [route, setRoute] = useState(location.hash.slice(1) || '/');
  useEffect(() => {
    const on = () => setRoute(location.hash.slice(1) || '/');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function Login({ onDone, refused }: { onDone: () => void; refused?: boolean }) {
  const [key, setKey] = useState('');
  return (
    <main class="login">
      <h1>Hearth</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          apiKey.set(key.trim());
          onDone();
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <button type="submit">Sign in</button>
        {refused && (
          <p role="alert" class="error">
            That key was refused.
          </p>
        )}
      </form>
    </main>
  );
}

function App() {
  const route = useRoute();
  // The key's scope decides the view: an admin key manages everything, a deploy key its tenant's
  // functions, an invoke key sees what it may call.
  const [auth, setAuth] = useState<'checking' | Scope | 'ask' | 'refused' | 'error'>('checking');
  const [tenant, setTenant] = useState<string | undefined>();
  const check = () =>
    api<Catalog>('/api/v1/catalog').then(
      (c) => {
        setTenant(c.tenant);
        setAuth(c.scope);
      },
      (e: unknown) => {
        if (!(e instanceof ApiError) || e.status !== 401) return setAuth('error');
        setAuth(apiKey.get() ? 'refused' : 'ask');
      },
    );
  useEffect(() => void check(), []);
  if (auth === 'checking') return <p class="loading">Loading…</p>;
  if (auth === 'error') return <p class="error">The node did not answer: reload to try again.</p>;
  if (auth === 'ask' || auth === 'refused') return <Login refused={auth === 'refused'} onDone={() => void check()} />;
  const admin = auth === 'admin'; // manages every tenant's functions and sees the nodes
  const manages = admin || auth === 'deploy'; // a deploy key manages its tenant's
  const fn = /^\/fn\/(.+)$/.exec(route)?.[1];
  return (
    <>
      <header>
        <a class="brand" href="#/">
          Hearth
        </a>
        <nav aria-label="Sections">
          <a href="#/" aria-current={route === '/' ? 'page' : undefined}>
            Functions
          </a>
          <a href="#/jobs" aria-current={route === '/jobs' ? 'page' : undefined}>
            Jobs
          </a>
          {admin && (
            <a href="#/nodes" aria-current={route === '/nodes' ? 'page' : undefined}>
              Nodes
            </a>
          )}
        </nav>
        {!admin && (
          <span class="muted">{auth === 'deploy' ? `deploy key · ${tenant ?? 'default'}` : 'invoke key'}</span>
        )}
        {apiKey.get() && (
          <button
            type="button"
            class="link"
            onClick={() => {
              apiKey.clear();
              location.hash = '#/';
              setAuth('ask');
            }}
          >
            Sign out
          </button>
        )}
      </header>
      <main>
        {fn ? (
          manages ? (
            <FunctionPage key={fn} name={decodeURIComponent(fn)} />
          ) : (
            <CallablePage key={fn} name={decodeURIComponent(fn)} />
          )
        ) : route.startsWith('/jobs') ? (
          <Jobs />
        ) : route === '/nodes' && admin ? (
          <Nodes />
        ) : manages ? (
          <Overview />
        ) : (
          <Callable />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
