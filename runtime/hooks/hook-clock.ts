/**
 * A hook call's time limit, counted from when the hook's own code starts on its thread. The time a
 * task waits for a thread, a new thread's start, and the hook's import and setup on that thread
 * are not the hook's call: counting them killed innocent calls on a busy machine (a request retried
 * on a thread started after its group's thread was ended spent the whole limit waiting for it).
 * The thread reports its progress on a shared Int32Array (HookTask.progress); this side waits for
 * it with Atomics.waitAsync, so no timer polls.
 */
import { HOOK_LOADING, HOOK_RUNNING } from './messages.js';

/**
 * Calls `expire` once the task has run `limitMs` since its thread reported HOOK_RUNNING, or
 * `loadLimitMs` since HOOK_LOADING while it loads the hook. Returns the stop function, which must be
 * called when the task ends (it releases the wait).
 */
export function watchHookTime(
  progress: Int32Array,
  limitMs: number,
  loadLimitMs: number,
  expire: () => void,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const step = (stage: number): void => {
    if (stopped) return;
    clearTimeout(timer);
    if (stage === HOOK_RUNNING) {
      timer = setTimeout(expire, limitMs);
      return;
    }
    if (stage === HOOK_LOADING) timer = setTimeout(expire, Math.max(limitMs, loadLimitMs));
    const wait = Atomics.waitAsync(progress, 0, stage);
    if (wait.async) void wait.value.then(() => step(Atomics.load(progress, 0)));
    else step(Atomics.load(progress, 0));
  };
  step(Atomics.load(progress, 0));
  return () => {
    stopped = true;
    clearTimeout(timer);
    Atomics.notify(progress, 0);
  };
}
