/**
 * The kernel's jail, attacked through the model, which is native code: a TorchScript model reaches
 * files through torch.from_file and torch.save. Such models are refused at deploy (the operator
 * check: also through torch.jit._fork's subgraph, and for operators outside the allow list), and
 * one that would act as it loads (__setstate__) is refused before any of its code runs: it reads
 * no file of the node's — the registry, the secrets key — nor the host's (/etc/hostname), writes
 * nothing, and a __setstate__ that raises reaches the deployer as one short clean line. The jail
 * stands behind the check (the runner's own layers, tested below and in jail.test.ts). Each attack
 * runs against a node as root and against a node as an unprivileged uid (the container image's
 * way), whose runners share its uid outside their user namespaces. The data dir lies outside /tmp,
 * so the runners' private /tmp is not what hides it. */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { hookWorkerFile, runnerEntryFile } from '../../runtime/index.js';
import { modelPath, PYTHON, REPO_ROOT } from '../helpers/fixtures.js';
import type { NodeProcess } from '../helpers/node.js';
import { postFunction, spawnNode, upload } from '../helpers/node.js';
import { waitFor } from '../helpers/wait.js';

const run = promisify(execFile);
const root = process.getuid?.() === 0;
const ADMIN = 'sandbox-admin-key-01';
const auth = { authorization: `Bearer ${ADMIN}` };
const NOBODY = { uid: 65534, gid: 65534 };
const base = await mkdtemp('/var/tmp/hearth-sandbox-');
await chmod(base, 0o755);
afterAll(() => rm(base, { recursive: true, force: true }));

const X4 = { maxBatchSize: 8, instances: { device: 'cpu' }, model: 'model.pt' };
const SMALL = {
  ...X4,
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
};
const WITH_PATH = {
  ...X4,
  maxBatchSize: 0,
  inputs: [
    { name: 'x', dtype: 'FP32', dims: [4] },
    { name: 'path', dtype: 'BYTES', dims: [1] },
  ],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [4] }],
};
const DOUBLES = {
  ...X4,
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [4] }],
};

/** Hostile models made for these paths (test/fixtures/make_models.py --at-load). */
async function atLoad(dir: string, attacks: { name: string; mode: 'read' | 'write'; path: string; size: number }[]) {
  const args = attacks.flatMap((a) => [a.mode, a.path, String(a.size), join(dir, `${a.name}.pt`)]);
  await run(PYTHON, [join(REPO_ROOT, 'test', 'fixtures', 'make_models.py'), '--at-load', ...args]);
  return Object.fromEntries(
    await Promise.all(attacks.map(async (a) => [a.name, new Uint8Array(await readFile(join(dir, `${a.name}.pt`)))])),
  ) as Record<string, Uint8Array>;
}

describe.skipIf(!root)('HEARTH_SANDBOX=strict', () => {
  it('refuses to start, naming the missing layer, where a layer cannot be had (no cgroup for a node that is not root)', async () => {
    const dataDir = join(base, 'strict');
    await mkdir(dataDir, { recursive: true });
    await chown(dataDir, NOBODY.uid, NOBODY.gid);
    const failed = await run(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'platform', 'entry', 'main.ts')], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        HEARTH_SANDBOX: 'strict',
        HEARTH_DATA_DIR: dataDir,
        HEARTH_HTTP_PORT: '0',
        HEARTH_GRPC_PORT: '0',
        HEARTH_METRICS_PORT: '0',
        HEARTH_RUNNER_ENTRY: await runnerEntryFile(),
        HEARTH_HOOK_WORKER: await hookWorkerFile(),
      },
      ...NOBODY,
    }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toMatch(/HEARTH_SANDBOX=strict: .*cgroup/);
  });
});

describe.each([
  ['as root', undefined],
  ['as an unprivileged uid', NOBODY],
])('a hostile model, with the node %s', (_, user) => {
  const home = join(base, user ? 'nobody' : 'root');
  const dataDir = join(home, 'data');
  const lines: string[] = [];
  const marker = `/tmp/hearth-attack-${randomUUID()}`;
  const shmFile = `/dev/shm/hearth-fill-${randomUUID()}`;
  let node: NodeProcess;
  let models: Record<string, Uint8Array>;
  let victim: Buffer;

  const deploy = async (name: string, spec: object, model: Uint8Array) => {
    const r = await postFunction(
      node.url,
      { spec: { ...spec, name }, artifacts: { model: await upload(node.url, model, auth) } },
      auth,
    );
    return { status: r.status, body: (await r.json()) as { status: string; reason?: string } };
  };
  const logs = async (name: string) =>
    JSON.stringify(
      await (await fetch(`${node.url}/api/v1/functions/${name}/logs?limit=1000`, { headers: auth })).json(),
    );

  beforeAll(async () => {
    if (user && !root) return;
    await mkdir(dataDir, { recursive: true });
    if (user) await chown(home, user.uid, user.gid);
    if (user) await chown(dataDir, user.uid, user.gid);
    // Runner entries built here, so a node that is not root never writes into node_modules.
    const entries = { HEARTH_RUNNER_ENTRY: await runnerEntryFile(), HEARTH_HOOK_WORKER: await hookWorkerFile() };
    node = await spawnNode(
      dataDir,
      { HEARTH_API_KEYS: `${ADMIN}:admin`, ...entries },
      (l) => lines.push(l),
      undefined,
      user,
    );
    expect((await deploy('victim', SMALL, new Uint8Array(await readFile(modelPath('small'))))).status).toBe(201);
    const secret = await fetch(`${node.url}/api/v1/secrets/VICTIM_TOKEN`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'the victim token' }),
    });
    expect(secret.status).toBe(200);
    const record = join(dataDir, 'registry', 'victim.json');
    const key = join(dataDir, 'secrets', 'secrets.key');
    victim = await readFile(record);
    models = await atLoad(home, [
      { name: 'read-record', mode: 'read', path: record, size: victim.byteLength },
      { name: 'read-key', mode: 'read', path: key, size: (await stat(key)).size },
      { name: 'read-hostname', mode: 'read', path: '/etc/hostname', size: (await stat('/etc/hostname')).size },
      { name: 'write-tmp', mode: 'write', path: marker, size: 16 },
      { name: 'write-record', mode: 'write', path: record, size: 16 },
      { name: 'fill-shm', mode: 'write', path: shmFile, size: 256 * 2 ** 20 },
    ]);
  }, 180_000);
  afterAll(async () => {
    node?.child.kill('SIGKILL');
    await rm(marker, { force: true });
    await rm(shmFile, { force: true });
  });

  it.skipIf(user && !root)('is jailed with every layer this host offers, said at start', async () => {
    // At start, or — where the spare runner was late on a loaded machine — as the first runner starts.
    const said = await waitFor(
      'the node to say which layers its runners have',
      () => lines.find((l) => l.includes('runners are jailed')),
      (l) => l !== undefined,
    );
    for (const layer of ['namespaces(user,mount,pid,net', 'uid', 'landlock(ABI', 'seccomp'])
      expect(said).toContain(layer);
    // A root node makes the runners' cgroups; one that is not root may not, and says so.
    if (!user) expect(said).toContain('cgroup');
    else expect(said).toMatch(/cgroup: this node may not make cgroups/);
  });

  it.skipIf(user && !root)(
    'is refused at deploy when it calls torch.from_file or torch.save, naming the call',
    async () => {
      const reads = await deploy('reads-file', WITH_PATH, new Uint8Array(await readFile(modelPath('reads_file'))));
      expect(reads.status).toBe(422);
      expect(reads.body.reason).toMatch(
        /the model calls aten::from_file \(it reads, writes and creates files\) in hostile_models\.ReadsFile\.forward\(\)/,
      );
      const saves = await deploy('saves', DOUBLES, new Uint8Array(await readFile(modelPath('saves'))));
      expect(saves.status).toBe(422);
      expect(saves.body.reason).toMatch(/aten::save \(it writes files\) in hostile_models\.Saves\.forward\(\)/);
    },
  );

  it.skipIf(user && !root)(
    'is refused at deploy for torch.from_file called through torch.jit._fork, or an operator outside the allow list',
    async () => {
      const forks = await deploy('forks-file', WITH_PATH, new Uint8Array(await readFile(modelPath('forks_file'))));
      expect(forks.status).toBe(422);
      expect(forks.body.reason).toMatch(
        /the model calls aten::from_file \(it reads, writes and creates files\) in hostile_models\.ForksFile\.forward\(\), in the subgraph of prim::fork/,
      );
      // A custom namespace this node does not have, and one LibTorch has (profiler::) but the list lacks.
      const custom = await deploy('custom-op', DOUBLES, new Uint8Array(await readFile(modelPath('custom_op'))));
      expect(custom.status).toBe(422);
      expect(custom.body.reason).toMatch(
        /the model calls hearth_test::leak \(an operator of namespace hearth_test, which Hearth does not run: .*\) at code\/__torch__\/hostile_models\.py:\d+/,
      );
      const profiles = await deploy('profiles', DOUBLES, new Uint8Array(await readFile(modelPath('profiles'))));
      expect(profiles.status).toBe(422);
      expect(profiles.body.reason).toMatch(/the model calls profiler::\w+ \(an operator of namespace profiler, /);
    },
  );

  it.skipIf(user && !root)(
    'reads nothing as it loads: refused before its __setstate__ runs, the file never read',
    async () => {
      for (const name of ['read-record', 'read-key', 'read-hostname']) {
        const r = await deploy(name, DOUBLES, models[name]!);
        expect([name, r.status]).toEqual([name, 422]);
        expect(r.body.reason).toMatch(/aten::from_file .* in hostile_models\.AtLoad\.__setstate__\(\)/);
        // The check read the archive's code without running it: no read was tried (on the code
        // before the check, the jail denied it: Permission denied, or no such file in its mounts).
        expect(await logs(name)).not.toMatch(/Permission denied|No such file or directory|EXFILTRATED \[/);
      }
    },
    120_000,
  );

  it.skipIf(user && !root)(
    'says why its __setstate__ failed in one short clean line: no control characters, no path of the node',
    async () => {
      const r = await deploy('setstate-raises', DOUBLES, new Uint8Array(await readFile(modelPath('setstate_raises'))));
      expect(r.status).toBe(422);
      const reason = r.body.reason!;
      expect(reason).toMatch(/^the model's code failed as the file loaded: builtins\.RuntimeError: PWNED <path>/);
      expect(reason.length).toBeLessThanOrEqual(300);
      expect(reason).not.toMatch(/[\p{Cc}\p{Cf}]|\/var\/lib|\/work\//u);
      expect((await fetch(`${node.url}/v2/health/ready`)).status).toBe(200);
    },
  );

  it.skipIf(user && !root)(
    "writes nothing outside its own /tmp: not the host's /tmp, not another function's record, not /dev/shm",
    async () => {
      // Refused before its __setstate__ runs: nothing is written, anywhere.
      const tmp = await deploy('write-tmp', DOUBLES, models['write-tmp']!);
      expect(tmp.status).toBe(422);
      expect(tmp.body.reason).toMatch(/aten::from_file .* in hostile_models\.AtLoad\.__setstate__\(\)/);
      expect(existsSync(marker)).toBe(false);
      const record = await deploy('write-record', DOUBLES, models['write-record']!);
      expect(record.status).toBe(422);
      expect(await logs('write-record')).not.toMatch(/Permission denied|No such file or directory/);
      expect(await readFile(join(dataDir, 'registry', 'victim.json'))).toEqual(victim);
      const fill = await deploy('fill-shm', DOUBLES, models['fill-shm']!);
      expect(fill.status).toBe(422);
      expect(existsSync(shmFile)).toBe(false);
      expect((await fetch(`${node.url}/v2/health/ready`)).status).toBe(200);
      const answer = await fetch(`${node.url}/v2/models/victim/infer`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] }),
      });
      expect(answer.status).toBe(200);
    },
    120_000,
  );

  it.skipIf(user && !root)('keeps its data dir its own: 0700, records 0600', async () => {
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dataDir, 'registry', 'victim.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dataDir, 'secrets', 'secrets.key'))).mode & 0o777).toBe(0o600);
  });
});
