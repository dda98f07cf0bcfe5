/** A function's versions and traffic: the split, a change confirmed before it is sent, rollback, and scaling. */
import { useState } from 'preact/hooks';

import { canaryText } from '../../sdk/api/canary-text.js';
import type { FunctionInfo } from './api.js';
import { send } from './api.js';
import { DataTable, splitText } from './ui.js';

type Version = FunctionInfo['versions'][number];

/** Whether a split may give the version traffic: a ready one, or one its canary rolled back (it is loaded and can). */
const takesTraffic = (v: Version) => v.status === 'ready' || v.status === 'rolled-back';

/**
 * The traffic form's state: the weights being edited, the split awaiting confirmation, and the
 * node's answer to a change or a rollback, as a line.
 */
function useTrafficChange(info: FunctionInfo, path: string, onChange: () => void) {
  const ready = info.versions.filter(takesTraffic);
  const [weights, setWeights] = useState<Record<string, string>>({});
  const [confirming, setConfirming] = useState<Record<string, number> | undefined>();
  const [message, setMessage] = useState<string | undefined>();
  const proposed = () =>
    Object.fromEntries(
      ready
        .map((v) => [String(v.version), Number(weights[v.version] ?? info.traffic[v.version] ?? 0)] as const)
        .filter(([, w]) => w > 0),
    );
  const apply = async () => {
    try {
      const r = await send<{ traffic: Record<string, number> }>(`${path}/traffic`, 'PUT', { traffic: confirming });
      setMessage(`Traffic is now ${splitText(r.traffic)}`);
      setWeights({});
      onChange();
    } catch (e) {
      setMessage((e as Error).message);
    }
    setConfirming(undefined);
  };
  const rollback = async () => {
    try {
      const r = await send<{ traffic: Record<string, number> }>(`${path}/rollback`, 'POST', {});
      setMessage(`Rolled back: traffic is now ${splitText(r.traffic)}`);
      onChange();
    } catch (e) {
      setMessage((e as Error).message);
    }
  };
  return { weights, setWeights, confirming, setConfirming, message, proposed, apply, rollback };
}

export function Versions({ info, path, onChange }: { info: FunctionInfo; path: string; onChange: () => void }) {
  const { weights, setWeights, confirming, setConfirming, message, proposed, apply, rollback } = useTrafficChange(
    info,
    path,
    onChange,
  );
  const serving = info.versions.filter((v) => (info.traffic[v.version] ?? 0) > 0);
  return (
    <section aria-labelledby="versions-title">
      <h2 id="versions-title">Versions and traffic</h2>
      {info.canary && (
        <p class={info.canary.state === 'rolled-back' ? 'canary error' : 'canary'} data-canary={info.canary.state}>
          {canaryText(info.canary)}
        </p>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setConfirming(proposed());
        }}
      >
        <DataTable head={['Version', 'Status', 'Created', 'Traffic weight']}>
          {info.versions.map((v) => (
            <VersionRow
              key={v.version}
              version={v}
              weight={weights[v.version] ?? String(info.traffic[v.version] ?? 0)}
              onWeight={(weight) => setWeights({ ...weights, [v.version]: weight })}
            />
          ))}{' '}
        </DataTable>
        <div class="row">
          <button type="submit">Change traffic…</button>
          {info.previousTraffic && (
            <button type="button" onClick={() => void rollback()}>
              Roll back to {splitText(info.previousTraffic)}
            </button>
          )}
        </div>
      </form>
      {confirming && (
        <ConfirmTraffic
          from={info.traffic}
          to={confirming}
          onApply={() => void apply()}
          onCancel={() => setConfirming(undefined)}
        />
      )}
      {message && <output class="message">{message}</output>}
      {serving.map((v) => (
        <p key={v.version} class="muted">
          v{v.version} scaling: min {v.spec.scaling.minInstances}, max {v.spec.scaling.maxInstances}, target queue{' '}
          {v.spec.scaling.targetQueueDepth}, idle {v.spec.scaling.scaleDownAfterS} s
        </p>
      ))}
    </section>
  );
}

/** A version's row: its status (and why), when it was made, and its traffic weight, editable once it is ready. */
function VersionRow({
  version: v,
  weight,
  onWeight,
}: {
  version: Version;
  weight: string;
  onWeight: (weight: string) => void;
}) {
  return (
    <tr>
      <th scope="row">v{v.version}</th>
      <td data-status={v.status}>
        <span class={v.status === 'rolled-back' ? 'error' : undefined}>{v.status}</span>
        {v.reason && <span class="muted"> — {v.reason}</span>}
      </td>
      <td>{new Date(v.createdAt).toLocaleString()}</td>
      <td>
        {takesTraffic(v) ? (
          <input
            type="number"
            min="0"
            aria-label={`Traffic weight of v${v.version}`}
            value={weight}
            onInput={(e) => onWeight(e.currentTarget.value)}
          />
        ) : (
          '—'
        )}
      </td>
    </tr>
  );
}

/** The change of split, said in full before it is sent. */
function ConfirmTraffic({
  from,
  to,
  onApply,
  onCancel,
}: {
  from: Record<string, number>;
  to: Record<string, number>;
  onApply: () => void;
  onCancel: () => void;
}) {
  return (
    <dialog open aria-labelledby="confirm-title" class="dialog">
      <h3 id="confirm-title">Change the traffic split?</h3>
      <p>
        From <strong>{splitText(from)}</strong> to <strong>{splitText(to)}</strong>.
      </p>
      <div class="row">
        <button type="button" onClick={onApply}>
          Apply
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}
