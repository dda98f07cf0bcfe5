/** The pieces every page of the console shares: an error line, a table, polling, and tensors and splits as text. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/** An error line, read out when it appears. */
export function Alert({ error }: { error?: string }) {
  return error ? (
    <p role="alert" class="error">
      {error}
    </p>
  ) : null;
}

/** A table that scrolls sideways on a narrow screen: column heads, an optional hidden caption, rows. */
export function DataTable({
  head,
  caption,
  children,
}: {
  head: string[];
  caption?: string;
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table>
        {caption && <caption class="sr-only">{caption}</caption>}
        <thead>
          <tr>
            {head.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** A tensor as a line of text: `x FP32 [1024]`. */
export const shapeText = (t: { name: string; dtype: string; dims: number[] }) =>
  `${t.name} ${t.dtype} [${t.dims.join(', ')}]`;

/** Calls `load` now and every `ms`, keeping its latest value (and error). */
export function usePoll<T>(load: () => Promise<T>, ms = 1000, deps: unknown[] = []): { value?: T; error?: string } {
  const [state, setState] = useState<{ value?: T; error?: string }>({});
  useEffect(() => {
    let live = true;
    const tick = () =>
      load().then(
        (value) => live && setState({ value }),
        (e: Error) => live && setState((s) => ({ ...s, error: e.message })),
      );
    void tick();
    const timer = setInterval(tick, ms);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, deps);
  return state;
}

export const splitText = (traffic: Record<string, number>) =>
  Object.entries(traffic)
    .map(([v, w]) => `v${v}=${w}`)
    .join(' ') || '—';
