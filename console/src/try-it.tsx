/**
 * Try it: a body to start from (zeros in the version's shapes, or a hint where zeros are no help),
 * sent to the function's URL with its status, time and answer, and the same call from curl, the
 * CLI and the SDK.
 */
import { useState } from 'preact/hooks';

import type { FunctionInfo } from './api.js';
import { headers } from './api.js';

/**
 * What Try it needs of a version: its inputs, batching, whether a hook reads the body, and the
 * spec's example (the body its deploy was checked with) or the name of its example file.
 */
export interface TryIo {
  inputs: { name: string; dtype: string; dims: number[] }[];
  maxBatchSize: number;
  hook: boolean;
  example?: unknown;
  exampleFile?: string;
}

export const ioOf = (spec: FunctionInfo['versions'][number]['spec'] | undefined): TryIo | undefined =>
  spec && {
    inputs: spec.inputs,
    maxBatchSize: spec.maxBatchSize,
    hook: Boolean(spec.hook),
    example: spec.example,
    exampleFile: spec.exampleFile,
  };

/** Past this many values a row, zeros to start from are no help (an image is 150,528): a file is. */
const MAX_SAMPLE_VALUES = 1024;

const valuesOf = (dims: number[]): number => dims.reduce((n, d) => n * Math.max(1, d), 1);

/** What a body too large to pre-fill should hold, said in the empty box. */
function bodyHint(io: TryIo | undefined): string | undefined {
  if (io?.example !== undefined) return undefined;
  if (io?.exampleFile) return `this function's example is a file, ${io.exampleFile}: choose it (or another) below`;
  const big = io?.inputs.find((i) => valuesOf(i.dims) > MAX_SAMPLE_VALUES);
  return (
    big &&
    `${big.name} takes ${big.dtype} [${big.dims.join(', ')}] (${valuesOf(big.dims).toLocaleString('en-US')} values a row): choose a file below, or paste a body`
  );
}

/**
 * A body to start from: the spec's example, else the default hook's {"inputs": {name: zeros}}, or
 * rows of zeros for a hook; empty, with a hint, where the example is a file or an input is too large
 * for zeros to help.
 */
export function sampleBody(io: TryIo | undefined): string {
  if (!io) return '{}';
  if (io.example !== undefined) {
    const line = JSON.stringify(io.example);
    return line.length <= 80 ? line : JSON.stringify(io.example, null, 2);
  }
  if (bodyHint(io) !== undefined) return '';
  const zeros = (dims: number[]): unknown =>
    dims.length === 0 ? 0 : Array.from({ length: Math.max(1, dims[0]!) }, () => zeros(dims.slice(1)));
  const one = (dims: number[]) => (io.maxBatchSize > 0 ? [zeros(dims)] : zeros(dims));
  if (!io.hook) return JSON.stringify({ inputs: Object.fromEntries(io.inputs.map((i) => [i.name, one(i.dims)])) });
  return JSON.stringify({ inputs: one(io.inputs[0]?.dims ?? []) });
}

export function TryIt({ name, io }: { name: string; io: TryIo | undefined }) {
  const [body, setBody] = useState(() => sampleBody(io));
  const [file, setFile] = useState<File | undefined>();
  const [result, setResult] = useState<{ status: number; ms: number; text: string } | undefined>();
  const url = `${location.origin}/fn/${encodeURIComponent(name)}`;
  const run = async (e: Event) => {
    e.preventDefault();
    const started = performance.now();
    const r = await fetch(`/fn/${encodeURIComponent(name)}`, {
      method: 'POST',
      headers: headers({ 'content-type': file ? file.type || 'application/octet-stream' : 'application/json' }),
      body: file ?? body,
    });
    const text = await r.text();
    let shown = text;
    try {
      shown = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // not JSON: shown as it came
    }
    setResult({ status: r.status, ms: performance.now() - started, text: shown });
  };
  const oneLine = body.replace(/\s*\n\s*/g, ' ');
  return (
    <section aria-labelledby="try-title">
      <h2 id="try-title">Try it</h2>
      <form onSubmit={(e) => void run(e)}>
        <label for="try-body">Request body (JSON)</label>
        <textarea
          id="try-body"
          rows={6}
          value={body}
          placeholder={bodyHint(io)}
          onInput={(e) => setBody(e.currentTarget.value)}
          disabled={Boolean(file)}
        />
        <label for="try-file">Or a file (an image, bytes)</label>
        <input id="try-file" type="file" onChange={(e) => setFile(e.currentTarget.files?.[0])} />
        <button type="submit">Send</button>
      </form>
      {result && (
        <div class="result" aria-live="polite">
          <p>
            <strong data-testid="try-status">{result.status}</strong> in {result.ms.toFixed(0)} ms
          </p>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take the keyboard's focus (WCAG 2.1.1) */}
          <pre data-testid="try-response" tabIndex={0}>
            {result.text}
          </pre>
        </div>
      )}
      <details>
        <summary>The same call from a terminal or code</summary>
        <pre>{`curl -s ${url} -H 'content-type: application/json'${headers().authorization ? " -H 'authorization: Bearer $HEARTH_API_KEY'" : ''} -d '${oneLine}'`}</pre>
        <pre>{`hearth invoke ${name} --data '${oneLine}'`}</pre>
        <pre>{`import { Hearth } from '@hearth/sdk';\nconst hearth = new Hearth({ url: '${location.origin}', apiKey: process.env.HEARTH_API_KEY });\nconsole.log((await hearth.invoke('${name}', ${oneLine})).json());`}</pre>
      </details>
    </section>
  );
}
