/**
 * The runner template (native/jail/template.cc): a Node process stopped before its main, with the
 * addon and LibTorch loaded, that forks each jailed runner where hearth-jail would exec Node and
 * load LibTorch again. A runner's start on this machine: ~0.8 s exec'd, of which the libraries'
 * load is ~0.6 s; forked, that part is paid once per node.
 *
 * The template holds nothing of the node's: it is started with a runner's environment (no
 * credentials), reads no request, and answers only hearth-jail processes this node started. A
 * runner it forks goes through hearth-jail's setup unchanged (namespaces, uid, mounts, Landlock,
 * seccomp, cgroups) before Node's main runs, and closes every descriptor but its own.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { addonLocation } from '../../engine/index.js';
import { jailPath } from '../walls/index.js';
import { nodeArguments, runnerEnv } from './runner-command.js';
import { ROOT_PREFIX } from './runner-os.js';

/** How long a template may take to load the runtime (LibTorch, CUDA's libraries) before it is given up. */
const READY_MS = 60_000;

/** Runners one template forks before it is replaced by a new one (a new layout and stack canary). */
export const FORKS_PER_TEMPLATE = 32;

/** The template's library, beside hearth-jail. */
export function templateLibrary(): string {
  return join(dirname(jailPath()), 'libhearth-template.so');
}

export class RunnerTemplate {
  readonly socket: string;
  readonly #child: ChildProcess;
  #alive = true;

  private constructor(child: ChildProcess, socket: string) {
    this.#child = child;
    this.socket = socket;
    child.unref();
    child.once('exit', () => {
      this.#alive = false;
    });
  }

  get alive(): boolean {
    return this.#alive;
  }

  /**
   * Starts a template for runners loading `addon` (its command line has a runner's shape: the
   * runner's arguments take the place of its own), its socket in `dir`; resolves once it listens, or
   * rejects with why it could not (its last lines).
   */
  static start(addon: string, permissions: boolean, dir: string): Promise<RunnerTemplate> {
    const library = templateLibrary();
    if (!existsSync(library)) return Promise.reject(new Error(`no runner template library at ${library}`));
    // Its socket in a folder of its own (each template's: one replacing another starts beside it)
    // that only the node's user may enter (mkdtemp makes it 0700; the runners' root is 0711).
    const own = mkdtempSync(join(dir, 'template-'));
    const socket = join(own, 'template.sock');
    // Its paths in its arguments are padded: a runner's arguments are written over them where they
    // fit (its /proc/PID/cmdline is then the runner's own).
    const padded = join(dir, `runner-template-${'-'.repeat(200)}`);
    const files = { entry: `${padded}/entry.mjs`, hookWorker: `${padded}/worker.mjs`, addon, dir: padded };
    const child = spawn(process.execPath, nodeArguments(files, permissions), {
      cwd: own,
      env: {
        ...runnerEnv(files, undefined),
        LD_PRELOAD: library,
        HEARTH_TEMPLATE_SOCKET: socket,
        HEARTH_TEMPLATE_PRELOAD: addon,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      // Its last lines, for the reason it failed; the pipe is drained for as long as it lives.
      for (const line of text.split('\n')) if (line) lines.push(line);
      lines.splice(0, lines.length - 20);
    });
    return new Promise((resolve, reject) => {
      const fail = (why: string): void => {
        child.kill('SIGKILL');
        reject(new Error(`the runner template did not start (${why}): ${lines.slice(-3).join(' | ')}`));
      };
      const timer = setTimeout(() => fail(`not ready in ${READY_MS / 1000} s`), READY_MS);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        fail(signal ?? `code ${code}`);
      });
      child.stdout!.setEncoding('utf8').once('data', (text: string) => {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        if (!text.startsWith('ready')) return fail(`it said ${JSON.stringify(text.slice(0, 100))}`);
        resolve(new RunnerTemplate(child, socket));
      });
    });
  }

  /** Ends it (the runners it forked live on: each is its own supervisor's). */
  close(): void {
    this.#alive = false;
    this.#child.kill('SIGKILL');
  }
}

/**
 * A host's runner template: started on first need (and again should it die), given up for good
 * where it could not start or a runner it forked could not (runners then exec Node).
 */
export class TemplateSlot {
  #template: Promise<RunnerTemplate | undefined> | undefined;
  #forks = 0;
  readonly #start: () => Promise<RunnerTemplate>;
  readonly #onFailed: (why: string) => void;

  /** `started`: one already on its way (the node's early one). */
  constructor(
    start: () => Promise<RunnerTemplate>,
    onFailed: (why: string) => void,
    started?: Promise<RunnerTemplate>,
  ) {
    this.#start = start;
    this.#onFailed = onFailed;
    if (started) this.#template = this.#failed(started);
  }

  #failed(started: Promise<RunnerTemplate>): Promise<RunnerTemplate | undefined> {
    return started.catch((error: Error) => {
      this.#onFailed(error.message);
      return undefined;
    });
  }

  /** The template for the next fork (one that forked FORKS_PER_TEMPLATE runners is replaced first). */
  async get(): Promise<RunnerTemplate | undefined> {
    if (++this.#forks > FORKS_PER_TEMPLATE) await this.retire();
    const current = this.#template && (await this.#template);
    if (current?.alive || (this.#template && !current)) return current;
    this.#template = this.#failed(this.#start());
    return this.#template;
  }

  /**
   * Replaces the template with a new one at once (its runners live on): every runner it forks shares
   * its address layout and stack canary, so one that crashed — perhaps probed — is not followed by
   * another with the same, nor are more than FORKS_PER_TEMPLATE runners.
   */
  async retire(): Promise<void> {
    const current = this.#template && (await this.#template);
    if (!current) return;
    this.#forks = 0;
    const next = this.#failed(this.#start());
    this.#template = next;
    // Ended once the new one is up: a start handed the old one just before still reaches it.
    void next.finally(() => current.close());
  }

  /** Ends it for good: what a runner it forked met (`why`) would meet the next. */
  async giveUp(why: string): Promise<void> {
    const current = await this.#template;
    this.#template = Promise.resolve(undefined);
    current?.close();
    this.#onFailed(why);
  }

  async close(): Promise<void> {
    (await this.#template)?.close();
  }
}

let early: { root: string; template: Promise<RunnerTemplate> } | undefined;

/**
 * Starts the node's runner template before the node's own modules load (platform/entry/main.ts),
 * where its environment says runners will be jailed: LibTorch's load (~0.7 s here) then overlaps
 * the node's start instead of following it. Its folder is the runner host's, who claims both.
 */
export function startTemplateEarly(env: NodeJS.ProcessEnv = process.env): void {
  if (early || process.platform !== 'linux') return;
  if ((env.HEARTH_ISOLATION ?? 'process') !== 'process' || env.HEARTH_SANDBOX === 'off') return;
  if (env.HEARTH_RUNNER_TEMPLATE === 'off') return;
  const root = mkdtempSync(join(tmpdir(), `${ROOT_PREFIX}${process.pid}-`));
  chmodSync(root, 0o711);
  const template = RunnerTemplate.start(addonLocation(), true, root);
  template.catch(() => undefined);
  early = { root, template };
}

/**
 * The early template and its folder, once, for a runner host with `options` where it is one that
 * host would start (undefined: none was started, it was claimed, or it is not that host's).
 */
export function claimEarlyTemplate(
  options: { dir?: string; template?: boolean; sandbox?: string; permissions?: boolean } = {},
): { root: string; template: Promise<RunnerTemplate> } | undefined {
  const { dir, template, sandbox, permissions } = options;
  if (dir || template === false || sandbox === 'off' || permissions === false) return undefined;
  const claimed = early;
  early = undefined;
  return claimed;
}

/** Ends an early template nobody will claim (the node runs no runners). */
export async function discardEarlyTemplate(): Promise<void> {
  const unclaimed = claimEarlyTemplate();
  if (!unclaimed) return;
  (await unclaimed.template.catch(() => undefined))?.close();
  rmSync(unclaimed.root, { recursive: true, force: true });
}
