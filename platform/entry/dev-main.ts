/**
 * `hearth dev <folder>`: one function on a node of its own, in this process, with the runtime a
 * node serves with (runner processes, hooks in isolates). It deploys the folder, prints the URL and
 * every line of the function's log (its hook's console, errors with request ids, lifecycle), and
 * deploys again when a file in the folder changes — hook.ts rebundled, model.pt reloaded — as
 * `cog predict` and `bentoml serve --reload` do. State lives in a temporary data dir, removed on exit.
 *
 *   node --import tsx platform/entry/dev-main.ts <folder> [--port N] [--host H] [--no-typecheck]
 *
 * Prints one JSON line `{"msg":"hearth dev ready",...}` first for programs, then text for people.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

import chokidar from 'chokidar';

import { logLine } from '../../sdk/cli/commands/logs.js';
import { deployFolder, readSpec } from '../../sdk/cli/deploy.js';
import { curlLine, deploys } from '../../sdk/cli/dev-watch.js';
import { Hearth } from '../../sdk/client.js';
import { loadConfig } from '../config/index.js';
import { startNode } from '../node/index.js';

/** Files whose change means nothing to the function (editors' swap files, the folder's own packages). */
const IGNORED = /(^|\/)(node_modules|\.git|\.hearth[^/]*)(\/|$)|(~|\.swp|\.swx|\.tmp|\.DS_Store)$/;
/** Changes this close together are one reload (an editor writes a file in several steps). */
const SETTLE_MS = 300;
const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const folder = resolve(args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--')) ?? '.');
const fail = (message: string): never => {
  console.error(`hearth dev: ${message}`);
  process.exit(1);
};

const dataDir = await mkdtemp(join(tmpdir(), 'hearth-dev-'));
// The embedded default, on loopback, with no keys: whatever a shell exported for a real node.
const { REDIS_URL, HEARTH_S3_BUCKET, HEARTH_API_KEYS, HEARTH_API_KEYS_FILE, ...env } = process.env;
const config = (() => {
  try {
    return loadConfig({
      ...env,
      HEARTH_HOST: option('--host') ?? '127.0.0.1',
      HEARTH_HTTP_PORT: option('--port') ?? '8000',
      HEARTH_GRPC_PORT: '0',
      HEARTH_METRICS_PORT: '0',
      HEARTH_DATA_DIR: dataDir,
      HEARTH_LOG_LEVEL: 'warn',
    });
  } catch (error) {
    return fail((error as Error).message);
  }
})();
const node = await startNode(config).catch((error: Error) =>
  fail(
    (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
      ? `port ${config.httpPort} is taken (a node already runs?): choose another with --port (0: any free port)`
      : error.message,
  ),
);
const client = new Hearth({ url: node.httpUrl });
const stop = new AbortController();

/** Deploys the folder; true when the new version serves. */
async function deploy(why: string): Promise<{ name: string; version: number } | undefined> {
  try {
    const r = await deployFolder(client, folder, { typecheck: !args.includes('--no-typecheck') });
    if (r.status === 'failed') {
      console.log(`✗ ${why}: ${r.name} v${r.version} failed to load: ${r.reason}`);
      return undefined;
    }
    console.log(`✓ ${why}: ${r.name} v${r.version} ${r.status}`);
    return { name: r.name, version: r.version };
  } catch (error) {
    console.log(`✗ ${why}: ${(error as Error).message}`);
    return undefined;
  }
}

/** The folder's spec as deployed last (what decides which changes reload). */
let spec = await readSpec(folder).catch(() => undefined);
const first = await deploy('deployed');
if (!first) {
  await node.close();
  await rm(dataDir, { recursive: true, force: true });
  process.exit(1);
}
let timer: NodeJS.Timeout | undefined;
let running = Promise.resolve();
const changed = new Set<string>();
// chokidar watches the folder, not each file: Node 20's recursive fs.watch on Linux follows a file's
// inode, so after one save by rename (sed -i, an editor's safe-save) it saw that file's edits no
// more. atomic: an unlink and add of one name within 100 ms is one change of it.
const watcher = chokidar.watch(folder, {
  ignored: (path: string) => IGNORED.test(relative(folder, path)),
  ignoreInitial: true,
  atomic: true,
});
watcher.on('all', (_event, path) => {
  const file = relative(folder, path);
  if (!file || IGNORED.test(file) || !deploys(file, spec)) return;
  changed.add(file);
  clearTimeout(timer);
  timer = setTimeout(() => {
    // Named as they are now (an editor's or sed's temporary file is gone by then).
    const files =
      [...changed]
        .filter((f) => existsSync(join(folder, f)))
        .sort()
        .join(', ') || 'a file removed';
    changed.clear();
    running = running.then(async () => {
      spec = (await readSpec(folder).catch(() => undefined)) ?? spec;
      await deploy(`reloaded (${files})`);
    });
  }, SETTLE_MS);
});
await new Promise<void>((ready) => watcher.once('ready', ready));

const url = `${node.httpUrl}/fn/${first.name}`;
console.log(JSON.stringify({ msg: 'hearth dev ready', url, node: node.httpUrl, function: first.name }));
console.log(`${first.name} on ${url}\n  ${curlLine(url, folder, spec)}\nwatching ${folder} (Ctrl-C stops)`);

// Every line of the function's log, as it comes.
void (async () => {
  try {
    for await (const e of client.followLogs(first.name, { limit: 1, signal: stop.signal })) console.log(logLine(e));
  } catch (error) {
    if (!stop.signal.aborted) console.error(`hearth dev: the log stream ended: ${(error as Error).message}`);
  }
})();

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void watcher.close();
    clearTimeout(timer);
    stop.abort();
    void running
      .then(() => node.close())
      .finally(async () => {
        await rm(dataDir, { recursive: true, force: true });
        process.exit(0);
      });
  });
}
