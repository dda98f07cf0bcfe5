/**
 * Secrets on a real node in its own process, with runner processes: a secret reaches the hook of
 * the function whose spec lists it (ctx.secrets.API_TOKEN, frozen) and no other; it is sealed on
 * disk, and never appears in `describe`, the secrets listing, the function logs, the node's log
 * lines or any runner's environment. A spec that lists a secret the node lacks fails its deploy
 * with 422 and the command that sets it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Hearth } from '../../sdk/client.js';
import type { NodeProcess } from '../helpers/node.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { SMALL_SPEC, SMALL_X } from '../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-secrets-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Every file's bytes under `root`, as text. */
async function filesUnder(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(root, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(await readFile(join(entry.parentPath, entry.name), 'latin1'));
  }
  return out;
}

/** The environments of the node's child processes (its runners). */
async function childEnvironments(pid: number): Promise<string[]> {
  const envs: string[] = [];
  for (const p of await readdir('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) envs.push(await readFile(`/proc/${p}/environ`, 'latin1').catch(() => ''));
  }
  return envs;
}

describe('secrets', () => {
  const token = `tok_${randomBytes(18).toString('hex')}`;
  const lines: string[] = [];
  let node: NodeProcess;
  let client: Hearth;
  beforeAll(async () => {
    node = await spawnNode(join(dir, 'data'), {}, (line) => lines.push(line));
    client = new Hearth({ url: node.url });
    expect(await client.setSecret('API_TOKEN', token)).toMatchObject({ name: 'API_TOKEN' });
    await client.setSecret('OTHER_ONE', 'not-for-anyone-here');
    const listed = { ...SMALL_SPEC, name: 'with-secret', hook: 'hook.ts', secrets: ['API_TOKEN'] };
    expect((await deployFixture(node.url, listed, { model: 'small', hook: 'secret' })).status).toBe(201);
    const unlisted = { ...SMALL_SPEC, name: 'without-secret', hook: 'hook.ts' };
    expect((await deployFixture(node.url, unlisted, { model: 'small', hook: 'secret' })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    node.child.kill('SIGTERM');
    await node.exited;
  });

  it("reaches only the listed function's hook, frozen", async () => {
    const listed = (await client.invoke('with-secret', { x: SMALL_X })).json<{
      token: string;
      names: string[];
      changed: boolean;
    }>();
    expect(listed).toMatchObject({ token, names: ['API_TOKEN'], changed: false });
    const unlisted = (await client.invoke('without-secret', { x: SMALL_X })).json<{
      token: string | null;
      names: string[];
    }>();
    expect(unlisted).toMatchObject({ token: null, names: [] });
  });

  it('never appears in describe, the listing, the logs, the data dir or a runner environment', async () => {
    expect(JSON.stringify(await client.describe('with-secret'))).not.toContain(token);
    expect((await client.describe('with-secret')).versions[0]!.spec).toMatchObject({ secrets: ['API_TOKEN'] });
    const listing = await client.secrets();
    expect(listing.map((s) => s.name)).toEqual(['API_TOKEN', 'OTHER_ONE']);
    expect(JSON.stringify(listing)).not.toContain(token);
    const logs = [...(await client.logs('with-secret')), ...(await client.logs('without-secret'))];
    expect(logs.some((e) => e.msg === 'secrets given: 1')).toBe(true);
    expect(JSON.stringify(logs)).not.toContain(token);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(token);
    for (const file of await filesUnder(join(dir, 'data'))) expect(file).not.toContain(token);
    const envs = await childEnvironments(node.child.pid!);
    expect(envs.length).toBeGreaterThan(0);
    for (const env of envs) expect(env).not.toContain(token);
  });

  it('a spec listing a secret the node lacks fails its deploy with 422 and the command that sets it', async () => {
    const missing = { ...SMALL_SPEC, name: 'needs-more', hook: 'hook.ts', secrets: ['NOT_SET_HERE'] };
    const r = await deployFixture(node.url, missing, { model: 'small', hook: 'secret' });
    expect(r.status).toBe(422);
    expect(((await r.json()) as { reason: string }).reason).toContain('hearth secrets set NOT_SET_HERE');
    const bad = await fetch(`${node.url}/api/v1/secrets/lower-case`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'x' }),
    });
    expect(bad.status).toBe(400);
  });

  it('rm removes it, and says when there was none', async () => {
    expect(await client.deleteSecret('OTHER_ONE')).toBe(true);
    expect(await client.deleteSecret('OTHER_ONE')).toBe(false);
    expect((await client.secrets()).map((s) => s.name)).toEqual(['API_TOKEN']);
  });
});
