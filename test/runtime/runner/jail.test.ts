/**
 * hearth-jail's layers, each alone: a probe (Node, as a runner is) tries what a hostile model would
 * — read a file that is not its own, write outside its scratch, connect to Redis, start a process,
 * signal another, see other processes — under one layer at a time, and each layer is shown to stop
 * what it is there to stop. Then the cgroup: a runner that fills its memory, or its private
 * /dev/shm, is killed by the kernel at its cap.
 */
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { jailPath, RunnerCgroups, runtimeReadable } from '../../../runtime/runner/walls/index.js';

const run = promisify(execFile);
const root = process.getuid?.() === 0;
const dir = await mkdtemp(join(tmpdir(), 'hearth-jail-'));
// Runners of other uids pass through to their homes (and find the secret, 0600, unreadable).
await chmod(dir, 0o711);
const home = join(dir, 'home');
const secret = join(dir, 'secret.txt');
await writeFile(secret, 'the node secret', { mode: 0o600 });
const marker = `/tmp/hearth-jail-marker-${randomUUID()}`;

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
// A probe with no wall around /tmp leaves the marker there.
afterEach(() => rm(marker, { force: true }));

/** What the probe tries; each entry is `{ ok, value }` or `{ ok: false, code }`. */
const PROBE = String.raw`
const fs = require('fs'), net = require('net'), os = require('os'), cp = require('child_process');
const [secret, marker, scratch, other] = process.argv.slice(1);
const attempt = (f) => { try { const v = f(); return { ok: true, value: v === undefined ? null : String(v).slice(0, 300) }; } catch (e) { return { ok: false, code: e.code || e.message }; } };
const out = {
  uid: process.getuid(),
  pid: process.pid,
  hostname: os.hostname(),
  readSecret: attempt(() => fs.readFileSync(secret, 'utf8')),
  readHostname: attempt(() => fs.readFileSync('/etc/hostname', 'utf8')),
  writeTmp: attempt(() => fs.writeFileSync(marker, 'x')),
  writeScratch: attempt(() => fs.writeFileSync(scratch + '/x', 'x')),
  processes: attempt(() => fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).length),
  spawn: attempt(() => cp.execFileSync('/bin/true')),
  signal: attempt(() => process.kill(Number(other), 0)),
};
const socket = net.connect(6379, '127.0.0.1');
socket.once('connect', () => { out.redis = { ok: true }; socket.destroy(); console.log(JSON.stringify(out)); });
socket.once('error', (e) => { out.redis = { ok: false, code: e.code }; console.log(JSON.stringify(out)); });
`;

interface Attempt {
  ok: boolean;
  value?: string;
  code?: string;
}
interface Probe {
  uid: number;
  pid: number;
  hostname: string;
  readSecret: Attempt;
  readHostname: Attempt;
  writeTmp: Attempt;
  writeScratch: Attempt;
  processes: Attempt;
  spawn: Attempt;
  signal: Attempt;
  redis: Attempt;
}

const readable = (() => {
  const { read, devices } = runtimeReadable([]);
  return [...read.map((p) => `--ro=${p}`), ...devices.map((p) => `--dev=${p}`)];
})();
const NOBODY = { uid: 65534, gid: 65534 };
const uids = (hint: number) => [
  '--uid',
  '--uid-range=300000:1000',
  `--uid-hint=${hint}`,
  '--gid=65534',
  `--lock-dir=${join(dir, 'uid-locks')}`,
];

/** A jailed runner with its own uid (hint `hint`) that lives until stopped; resolves once it has it. */
async function holdUid(hint: number) {
  const own = join(home, randomUUID());
  await run('mkdir', ['-p', own]);
  const child = spawn(jailPath(), [
    ...uids(hint),
    `--home=${own}`,
    '--',
    process.execPath,
    '-e',
    'console.log(process.getuid()); setInterval(() => {}, 1e6)',
  ]);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const uid = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`the holder exited (${code}) before it printed its uid`)));
  });
  return { uid, exited, stop: () => child.kill('SIGKILL') };
}

/**
 * Runs the probe under `layers`, as the test's user or as nobody (a node that is not root); its home
 * is a fresh folder with a scratch folder (tmp/) in it.
 */
async function probe(layers: string[], asNobody = false): Promise<Probe> {
  const own = join(home, randomUUID());
  await run('mkdir', ['-p', join(own, 'tmp')]);
  await run('chmod', ['-R', '777', own]);
  const { stdout } = await run(
    jailPath(),
    [
      ...layers,
      `--home=${own}`,
      '--',
      process.execPath,
      '-e',
      PROBE,
      secret,
      marker,
      join(own, 'tmp'),
      String(process.pid),
    ],
    asNobody ? NOBODY : {},
  );
  return JSON.parse(stdout) as Probe;
}

describe('hearth-jail, one layer at a time', () => {
  it('without any layer, the probe reaches everything (the attacks are real)', async () => {
    const p = await probe([]);
    expect(p.readSecret).toEqual({ ok: true, value: 'the node secret' });
    expect(p.writeTmp.ok).toBe(true);
    expect(p.spawn.ok).toBe(true);
    expect(p.signal.ok).toBe(true);
    expect(p.redis.ok).toBe(true);
  });

  it('Landlock alone: reads only the runtime and its home, writes only its scratch, no TCP, no signal outside', async () => {
    const p = await probe(['--landlock', ...readable]);
    expect(p.readSecret).toEqual({ ok: false, code: 'EACCES' });
    expect(p.readHostname).toEqual({ ok: false, code: 'EACCES' });
    expect(p.writeTmp).toEqual({ ok: false, code: 'EACCES' });
    expect(existsSync(marker)).toBe(false);
    expect(p.writeScratch.ok).toBe(true);
    expect(p.processes).toEqual({ ok: false, code: 'EACCES' });
    expect(p.redis).toEqual({ ok: false, code: 'EACCES' });
    expect(p.signal).toEqual({ ok: false, code: 'EPERM' });
  });

  it('seccomp alone: no socket, no process; files as before', async () => {
    const p = await probe(['--seccomp']);
    expect(p.redis).toEqual({ ok: false, code: 'EPERM' });
    expect(p.spawn.ok).toBe(false);
    expect(p.spawn.code).toBe('EPERM');
    expect(p.readSecret.ok).toBe(true);
  });

  it('namespaces alone: pid 1 of its own, no network, a private /tmp, its own host name', async () => {
    const p = await probe(['--namespaces']);
    expect(p.pid).toBe(1);
    expect(p.hostname).toBe('hearth-runner');
    // Its /proc shows its own pid namespace: itself.
    expect(p.processes).toEqual({ ok: true, value: '1' });
    // Its network namespace has no interface up: Redis on the host's loopback is out of reach.
    expect(p.redis.ok).toBe(false);
    expect(['ENETUNREACH', 'ECONNREFUSED']).toContain(p.redis.code);
    // The host's pids mean nothing inside.
    expect(p.signal).toEqual({ ok: false, code: 'ESRCH' });
    // Its writes to /tmp land in its own tmpfs, gone with it.
    expect(p.writeTmp.ok).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });

  it.skipIf(!root)(
    'uid alone: a uid of its own, locked per host, that reads no file of root and signals no root process',
    async () => {
      // A runner that holds its uid (it prints it, then waits) while a second starts with the same
      // hint: they overlap for certain (two probes started together may not, on a busy machine).
      const holder = await holdUid(7);
      try {
        const b = await probe(uids(7));
        expect(holder.uid).toBeGreaterThanOrEqual(300_000);
        expect(b.uid).toBeGreaterThanOrEqual(300_000);
        expect(b.uid).not.toBe(holder.uid);
        expect(b.readSecret).toEqual({ ok: false, code: 'EACCES' });
        expect(b.signal).toEqual({ ok: false, code: 'EPERM' });
      } finally {
        holder.stop();
      }
      // Its lock goes with it: the next runner with the hint takes the uid again.
      await holder.exited;
      expect((await probe(uids(7))).uid).toBe(holder.uid);
    },
  );

  it.skipIf(!root)('a node that is not root: each runner its own uid inside its user namespace', async () => {
    const p = await probe(['--namespaces', ...uids(3)], true);
    expect(p.uid).toBeGreaterThanOrEqual(300_000);
    // Outside it is the node's uid: its private /tmp hides the node's files there.
    expect(p.readSecret).toEqual({ ok: false, code: 'ENOENT' });
  });

  it.skipIf(!root)(
    'refuses to start the program, naming the layer, when one it must apply is missing (--require)',
    async () => {
      // Not root and no user namespace: no uid of its own to give.
      const failed = await run(
        jailPath(),
        ['--uid', '--uid-range=300000:10', '--require', '--', process.execPath, '-e', 'console.log("ran")'],
        NOBODY,
      ).catch((error: { code: number; stdout: string; stderr: string }) => error);
      expect(failed).toMatchObject({ code: 125, stdout: '' });
      expect((failed as { stderr: string }).stderr).toMatch(/sandbox is missing.*uid: the node is not root/);
    },
  );
});

describe.skipIf(!root)('a runner cgroup', () => {
  it('kills a runner at its memory cap, counting the files it writes in its private /dev/shm', async () => {
    const cgroups = await RunnerCgroups.open();
    expect(cgroups, JSON.stringify(cgroups)).toBeInstanceOf(RunnerCgroups);
    const groups = cgroups as RunnerCgroups;
    try {
      const cgroup = await groups.create('fill-shm');
      await cgroup.limitMemory(96 * 2 ** 20);
      const fill = `
        const fs = require('fs');
        const chunk = Buffer.alloc(16 << 20, 1);
        for (let i = 0; i < 32; i++) fs.writeFileSync('/dev/shm/fill-' + i, chunk);
        console.log('filled');`;
      const child = spawn(
        jailPath(),
        [
          '--namespaces',
          '--tmp-size=1073741824',
          ...cgroup.procs.map((p) => `--cgroup-procs=${p}`),
          '--',
          process.execPath,
          '-e',
          fill,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d;
      });
      const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
        child.once('exit', (c, s) => resolve([c, s])),
      );
      expect(out).not.toContain('filled');
      expect([code, signal]).toEqual([null, 'SIGKILL']);
      expect(await cgroup.oomKills()).toBeGreaterThanOrEqual(1);
      await cgroup.remove();
    } finally {
      await groups.close();
    }
  });
});
