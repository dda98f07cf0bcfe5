/**
 * One function's page: its versions and traffic, charts, cold starts, Try it and its log (an admin
 * key); for an invoke key, its versions' inputs and outputs and Try it.
 */
import { useState } from 'preact/hooks';

import type { Catalog, FunctionInfo } from './api.js';
import { api } from './api.js';
import { Charts } from './charts.js';
import { ColdStarts } from './cold-starts.js';
import { Logs } from './function-logs.js';
import { ioOf, TryIt } from './try-it.js';
import { Alert, shapeText, splitText, usePoll } from './ui.js';
import { Versions } from './versions.js';

export function FunctionPage({ name }: { name: string }) {
  const path = `/api/v1/functions/${encodeURIComponent(name)}`;
  const [tick, setTick] = useState(0);
  const { value: info, error } = usePoll(() => api<FunctionInfo>(path), 1000, [name, tick]);
  const refresh = () => setTick((t) => t + 1);
  return (
    <article aria-labelledby="fn-title">
      <h1 id="fn-title">{name}</h1>
      <Alert error={error} />
      {info && (
        <>
          <Versions info={info} path={path} onChange={refresh} />
          <Charts name={name} />
          <ColdStarts info={info} />
          <TryIt name={info.name} io={ioOf(info.versions.at(-1)?.spec)} />
          <Logs name={name} />
        </>
      )}
    </article>
  );
}

/** A function as an invoke key sees it: its versions' inputs and outputs, and Try it. */
export function CallablePage({ name }: { name: string }) {
  const { value, error } = usePoll(() => api<Catalog>('/api/v1/catalog'), 5000, [name]);
  const entry = value?.functions.find((f) => f.name === name);
  const main = entry?.versions.filter((v) => v.status === 'ready').at(-1);
  return (
    <article aria-labelledby="fn-title">
      <h1 id="fn-title">{name}</h1>
      <Alert error={error} />
      {value && !entry && <p class="error">No function {name}.</p>}
      {entry && (
        <>
          <section aria-labelledby="versions-title">
            <h2 id="versions-title">Versions</h2>
            <p class="muted">Traffic: {splitText(entry.traffic)}</p>
            <ul>
              {entry.versions.map((v) => (
                <li key={v.version}>
                  v{v.version} {v.status}: {v.inputs.map(shapeText).join(', ')} → {v.outputs.map(shapeText).join(', ')}
                </li>
              ))}
            </ul>
          </section>
          <TryIt key={main?.version} name={name} io={main} />
        </>
      )}
    </article>
  );
}
