/**
 * Hearth's console: every function live, one function's versions, traffic, charts, cold starts, log
 * and a "try it" panel, and the cluster's nodes. A single page (Preact), served by the node at
 * /console, talking to the node's public API only (./api.ts).
 */
import 'uplot/dist/uPlot.min.css';
import './style.css';

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';

import { ApiError, api, apiKey } from './api.js';
import { FunctionPage } from './function-page.js';
import { Jobs, Nodes, Overview } from './pages.js';

function useRoute(): string {
  const [route, setRoute] = useState(location.hash.slice(1) || '/');
  useEffect(() => {
    const on = () => setRoute(location.hash.slice(1) || '/');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function Login({ onDone, refused }: { onDone: () => void; refused?: 'unknown' | 'scope' }) {
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
            {refused === 'scope'
              ? 'That key may call functions but not manage them: the console needs an admin key.'
              : 'That key was refused.'}
          </p>
        )}
      </form>
    </main>
  );
}

function App() {
  const route = useRoute();
  const [auth, setAuth] = useState<'checking' | 'ok' | 'ask' | 'unknown' | 'scope'>('checking');
  const check = () =>
    api('/api/v1/functions').then(
      () => setAuth('ok'),
      (e: unknown) => {
        if (!(e instanceof ApiError) || (e.status !== 401 && e.status !== 403)) return setAuth('ok');
        if (!apiKey.get()) return setAuth('ask');
        // 403: a known key without the admin scope.
        setAuth(e.status === 403 ? 'scope' : 'unknown');
      },
    );
  useEffect(() => void check(), []);
  if (auth === 'checking') return <p class="loading">Loading…</p>;
  if (auth !== 'ok')
    return <Login refused={auth === 'unknown' || auth === 'scope' ? auth : undefined} onDone={() => void check()} />;
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
          <a href="#/nodes" aria-current={route === '/nodes' ? 'page' : undefined}>
            Nodes
          </a>
        </nav>
        {apiKey.get() && (
          <button
            type="button"
            class="link"
            onClick={() => {
              apiKey.clear();
              setAuth('ask');
            }}
          >
            Sign out
          </button>
        )}
      </header>
      <main>
        {fn ? (
          <FunctionPage key={fn} name={decodeURIComponent(fn)} />
        ) : route === '/jobs' ? (
          <Jobs />
        ) : route === '/nodes' ? (
          <Nodes />
        ) : (
          <Overview />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
