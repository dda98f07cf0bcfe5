/**
 * The runner template (native/jail/template.cc): a runner forked from it must be walled exactly as
 * one hearth-jail execs, and get nothing of the template's or the node's. The reference for each
 * case is the same probe exec'd by hearth-jail in the same run; then what only the template has: who
 * may ask it for a runner, what a runner's end and kill look like, what of the node's memory reaches
 * a runner (nothing: scanned), and the node's fallback where there is no template.
 */
import type { ChildProcess } from 'node:child_process';
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DEFAULT_ADDON_PATH } from '../../../runtime/engine/index.js';
import { RunnerHost } from '../../../runtime/index.js';
import { FORKS_PER_TEMPLATE } from '../../../runtime/runner/supervision/runner-template.js';
import { jailPath, runtimeReadable } from '../../../runtime/runner/walls/index.js';
import { processes } from '../../helpers/processes.js';

const run = promisify(execFile);
const root = process.getuid?.() === 0;
const dir = await mkdtemp(join(tmpdir(), 'hearth-template-'));
const secret = join(dir, 'secret.txt');
const socket = join(dir, 'template.sock');

/** What the probe reports: its walls, as jail.test.ts probes them, and what it holds. */
const PROBE = String.raw`
const fs = require('fs'), net = require('net'), cp = require('child_process');
const [secret] = process.argv.slice(1);
const attempt = (f) => { try { f(); return 'ok'; } catch (e) { return e.code || e.message; } };
const fds = fs.readdirSync('/proc/self/fd').map((fd) => { try { return fs.readlinkSync('/proc/self/fd/' + fd).replace(/\d+/g, 'N'); } catch { return 'gone'; } }).sort();
const out = {
  uid: process.getuid(), pid: process.pid, fds,
  cmdline: fs.readFileSync('/proc/self/cmdline', 'latin1').split('\0').filter(Boolean).slice(1),
  env: Object.keys(process.env).sort(),
  readSecret: attempt(() => fs.readFileSync(secret)),
  cwd: process.cwd(),
  parent: (() => { try { return fs.readdirSync('..'); } catch (e) { return e.code; } })(),
  sibling: attempt(() => fs.statSync('../sibling/model.pt')),
  writeTmp: attempt(() => fs.writeFileSync('/tmp/x', 'x')),
  spawn: attempt(() => cp.execFileSync('/bin/true')),
};
const s = net.connect(6379, '127.0.0.1');
s.once('connect', () => { out.redis = 'ok'; s.destroy(); console.log(JSON.stringify(out)); });
s.once('error', (e) => { out.redis = e.code; console.log(JSON.stringify(out)); });
`;
const probeArgs = [process.execPath, '-e', PROBE, secret];
const layers = (home: string) => {
  const { read, devices } = runtimeReadable([]);
  return [
    '--namespaces',
    '--landlock',
    '--seccomp',
    '--report-fd=3',
    `--home=${home}`,
    ...(root ? ['--uid', '--uid-range=310000:1000', '--gid=65534', `--lock-dir=${join(dir, 'locks')}`] : []),
    ...read.map((p) => `--ro=${p}`),
    ...devices.map((p) => `--dev=${p}`),
  ];
};

let template: ChildProcess;

/** The template as the node starts it: Node with the library preloaded, a command line of the probe's shape. */
async function startTemplate(): Promise<ChildProcess> {
  const addon = process.env.HEARTH_NATIVE_ADDON ?? DEFAULT_ADDON_PATH;
  const child = spawn(process.execPath, ['-e', 'x'.repeat(PROBE.length + 64), 'x'.repeat(secret.length)], {
    env: {
      PATH: '/usr/bin:/bin',
      LD_PRELOAD: join(dirname(jailPath()), 'libhearth-template.so'),
      HEARTH_TEMPLATE_SOCKET: socket,
      HEARTH_TEMPLATE_PRELOAD: addon,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const said = await new Promise<string>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(String(d))));
  expect(said).toBe('ready\n');
  return child;
}

/** hearth-jail with `args`, its report channel (fd 3) open: how it ended and what it printed. */
async function jail(
  args: string[],
): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  const child = spawn(jailPath(), args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d;
  });
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d;
  });
  (child.stdio[3] as NodeJS.ReadableStream).resume();
  const [code, signal] = await new Promise<[number | null, string | null]>((r) =>
    child.once('close', (c, s) => r([c, s])),
  );
  return { code, signal, stdout, stderr };
}

/** A home for a runner, beside another tenant's folder (`sibling/model.pt`) and the template's socket. */
async function home(): Promise<string> {
  const own = join(dir, randomUUID());
  await run('mkdir', ['-m', '777', '-p', join(own, 'tmp'), join(dir, 'sibling')]);
  await writeFile(join(dir, 'sibling', 'model.pt'), 'another tenant');
  return own;
}

async function probe(how: 'exec' | 'template'): Promise<Record<string, unknown>> {
  const own = await home();
  const template = how === 'template' ? [`--template=${socket}`] : [];
  const { stdout, stderr } = await jail([...template, ...layers(own), '--', ...probeArgs]);
  expect(stderr).not.toMatch(/hearth-jail/);
  return { ...(JSON.parse(stdout) as Record<string, unknown>), home: own };
}

beforeAll(async () => {
  await writeFile(secret, 'the node secret', { mode: 0o600 });
  await run('chmod', ['711', dir]);
  template = await startTemplate();
});
afterAll(async () => {
  template?.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

describe('a runner forked from the template', () => {
  it('is walled exactly as one exec’d: the same probe, the same answers, no descriptor or variable of the template', async () => {
    const [execd, forked] = await Promise.all([probe('exec'), probe('template')]);
    // Its descriptors: Node's own, as exec'd (which may also inherit stray pipes of this test's
    // process, closed at a fork), and nothing else.
    const unmatched = [...(execd.fds as string[])];
    for (const fd of forked.fds as string[]) {
      expect(unmatched).toContain(fd);
      unmatched.splice(unmatched.indexOf(fd), 1);
    }
    expect(unmatched.filter((fd) => !fd.startsWith('pipe:'))).toEqual([]);
    const same = { fds: [], uid: 0, cwd: '', home: '', parent: '' };
    expect({ ...forked, ...same }).toEqual({ ...execd, ...same });
    // Its working directory is its home inside its own mounts: no way up to its siblings' folders.
    for (const p of [execd, forked]) {
      expect(p.cwd).toBe(p.home);
      expect(JSON.stringify(p.parent)).not.toMatch(/sibling|template\.sock|secret/);
      expect(p.sibling).toBe('ENOENT');
    }
    // The reference is walled (the attacks are refused), and the runner's arguments are its own.
    // (A private /tmp of its own: the node's folder there does not exist for it.)
    expect(forked).toMatchObject({ pid: 1, readSecret: 'ENOENT', spawn: 'EPERM', redis: 'EPERM' });
    expect(forked.cmdline).toEqual(probeArgs.slice(1));
    expect(forked.env).not.toContain('LD_PRELOAD');
    expect((forked.fds as string[]).filter((f) => f.startsWith('/') && f !== '/dev/null')).toEqual([]);
    if (root) expect(forked.uid).toBeGreaterThanOrEqual(310_000);
  });

  it('is handed over only to hearth-jail started by the template’s own parent, asking for every wall', async () => {
    // sh is hearth-jail's parent here, not this process: the template closes the connection unanswered.
    const own = await home();
    const walls = layers(own).join(' ');
    const failed = await run('sh', [
      '-c',
      `"$0" --template=${socket} ${walls} -- ${process.execPath} -e 'console.log("ran")' 3>/dev/null; exit $?`,
      jailPath(),
    ]).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 125, stdout: '' });
    expect((failed as { stderr: string }).stderr).toMatch(/^hearth-jail: the (handoff to the )?runner template/);
    // Another program of this process (not hearth-jail): closed unanswered, nothing forked.
    const peer = await run('/usr/bin/python3', [
      '-c',
      `import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(${JSON.stringify(socket)})\ntry: s.send(b"x"); print(repr(s.recv(16)))\nexcept OSError: print("closed")`,
    ]);
    expect(["b''", 'closed']).toContain(peer.stdout.trim());
    // hearth-jail itself, asking for no walls: refused before anything runs.
    const bare = await jail([`--template=${socket}`, '--', process.execPath, '-e', 'console.log("ran")']);
    expect(bare).toMatchObject({ code: 125, stdout: '' });
    expect(bare.stderr).toMatch(/forks jailed runners only/);
  });

  it('ends as the runner ends (its exit mirrored), and a killed hearth-jail takes the runner with it', async () => {
    const pad = 'x'.repeat(PROBE.length);
    const walls = layers(await home());
    const ended = await jail([
      `--template=${socket}`,
      ...walls,
      '--',
      process.execPath,
      '-e',
      `process.exit(42) // ${pad}`,
      secret,
    ]);
    expect(ended).toMatchObject({ code: 42, signal: null });

    const marker = `live-${randomUUID()}`;
    const live = `setInterval(() => {}, 1000) // ${pad}`;
    const relay = spawn(jailPath(), [`--template=${socket}`, ...walls, '--', process.execPath, '-e', live, marker], {
      stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
    });
    // The runner as the host sees it: its command line is its own (the marker in it).
    let pid: number | undefined;
    while (!pid) {
      pid = (await processes()).find((p) => p.args.includes(marker) && !p.args[0]!.endsWith('/hearth-jail'))?.pid;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await alive(pid)).toBe(true);
    relay.kill('SIGKILL');
    while (await alive(pid)) await new Promise((r) => setTimeout(r, 20));
  });
});

describe.skipIf(!root)('what of the node reaches a forked runner', () => {
  it('none of its environment’s secrets, anywhere in the runner’s memory (a scan of it finds the same canary in the node)', async () => {
    const canary = `hearth-canary-${randomUUID()}`;
    process.env.HEARTH_TEST_CANARY = canary;
    const host = new RunnerHost({ spare: false });
    try {
      const runner = await host.take('canary@1');
      expect(host.sandbox?.layers.namespaces).toContain('pid');
      expect(await memoryHolds(process.pid, canary)).toBe(true);
      expect(await memoryHolds(runner.pid!, canary)).toBe(false);
      runner.kill();
    } finally {
      delete process.env.HEARTH_TEST_CANARY;
      await host.close();
    }
  });
});

it('replaces its template after FORKS_PER_TEMPLATE forks, the next runner forked by the new one (not exec’d)', async () => {
  const failures: string[] = [];
  const host = new RunnerHost({ spare: false, onTemplateFailed: (why) => failures.push(why) });
  const templates = async () =>
    (await processes())
      .filter((p) => p.ppid === process.pid && p.args.some((a) => a.includes('/runner-template-')))
      .map((p) => p.pid);
  try {
    let first: number[] = [];
    for (let i = 0; i <= FORKS_PER_TEMPLATE; i++) {
      const runner = await host.take(`many@${i}`);
      expect(runner.start.forked, `runner ${i}`).toBe(true);
      if (i === 0) first = await templates();
      runner.kill();
      await runner.cleaned;
    }
    expect(failures).toEqual([]);
    expect(first).toHaveLength(1);
    // The first is ended once the new one is up.
    let now = await templates();
    while (now.includes(first[0]!)) {
      await new Promise((r) => setTimeout(r, 20));
      now = await templates();
    }
    expect(now).toHaveLength(1);
  } finally {
    await host.close();
  }
}, 120_000);

it('falls back to exec’ing runners, saying why, where the template cannot start', async () => {
  const jail = join(dir, 'bare', 'hearth-jail');
  await run('mkdir', ['-p', dirname(jail)]);
  await copyFile(jailPath(), jail);
  await run('chmod', ['755', jail]);
  process.env.HEARTH_JAIL = jail;
  const failures: string[] = [];
  const host = new RunnerHost({ spare: false, onTemplateFailed: (why) => failures.push(why) });
  try {
    const runner = await host.take('fallback@1');
    expect(runner.alive).toBe(true);
    expect(failures).toEqual([expect.stringMatching(/^no runner template library at /)]);
  } finally {
    delete process.env.HEARTH_JAIL;
    await host.close();
  }
});

async function alive(pid: number): Promise<boolean> {
  const status = await readFile(`/proc/${pid}/status`, 'latin1').catch(() => '');
  return status !== '' && !/^State:\s+Z/m.test(status);
}

/** Whether `text` is anywhere in the writable memory of process `pid` (its heap, stacks and data). */
async function memoryHolds(pid: number, text: string): Promise<boolean> {
  const maps = await readFile(`/proc/${pid}/maps`, 'latin1');
  const mem = await open(`/proc/${pid}/mem`, 'r');
  const needle = Buffer.from(text);
  try {
    for (const line of maps.split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) rw/.exec(line);
      if (!m) continue;
      const [start, end] = [Number.parseInt(m[1]!, 16), Number.parseInt(m[2]!, 16)];
      for (let at = start; at < end; at += 16 << 20) {
        const size = Math.min(16 << 20, end - at) + needle.length;
        const chunk = Buffer.alloc(size);
        const { bytesRead } = await mem.read(chunk, 0, size, at).catch(() => ({ bytesRead: 0 }));
        if (chunk.subarray(0, bytesRead).includes(needle)) return true;
      }
    }
    return false;
  } finally {
    await mem.close();
  }
}
