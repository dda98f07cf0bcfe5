/** Waiting on observed state instead of sleeping on guesses. */

/**
 * Polls `probe` until `done` holds for what it returns, and returns that; after `timeoutMs` throws,
 * naming `what` and the last value seen. The timeout is a failsafe, not an assertion: a state that
 * never comes fails either way, and 60 s is past what a busy machine's delays reach.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T> | T,
  done: (value: T) => boolean,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const end = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(value)?.slice(0, 300)})`);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}
