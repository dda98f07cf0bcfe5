/**
 * The shared-memory arena between a node and a runner, natively: a memfd sealed at its size (a
 * runner cannot shrink it under the node's mapping, nor grow it), mapped by a second process from
 * the fd it inherits, each seeing what the other writes.
 */
import { spawn } from 'node:child_process';
import { closeSync, ftruncateSync, openSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { createArena, mapArena } from '../../../runtime/engine/index.js';
import { REPO_ROOT } from '../../helpers/fixtures.js';

const MiB = 2 ** 20;
const dir = await mkdtemp(join(tmpdir(), 'hearth-arena-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

it('is a memfd whose size no one can change once made', () => {
  const arena = createArena(MiB)!;
  try {
    expect(arena.buffer.byteLength).toBe(MiB);
    expect(() => ftruncateSync(arena.fd, 4096)).toThrow(/EPERM/);
    expect(() => ftruncateSync(arena.fd, 2 * MiB)).toThrow(/EPERM/);
  } finally {
    closeSync(arena.fd);
  }
  // The mapping outlives the fd.
  new Uint8Array(arena.buffer).fill(7, MiB - 64);
  expect(new Uint8Array(arena.buffer)[MiB - 1]).toBe(7);
});

it('maps only an arena: a plain file is refused', () => {
  const file = join(dir, 'plain');
  writeFileSync(file, Buffer.alloc(8192));
  const fd = openSync(file, 'r+');
  try {
    expect(() => mapArena(fd)).toThrow(/not an arena/);
  } finally {
    closeSync(fd);
  }
});

it('is one memory for the node and the process that inherits it', async () => {
  const arena = createArena(4 * MiB)!;
  const bytes = new Uint8Array(arena.buffer);
  for (let i = 0; i < 4096; i++) bytes[i] = i & 0xff;
  // The child maps fd 4, reads what the parent wrote in the first half, writes its sum in the second.
  const script = join(dir, 'child.ts');
  writeFileSync(
    script,
    `import { mapArena } from ${JSON.stringify(join(REPO_ROOT, 'runtime', 'engine', 'index.js'))};
const view = new Uint8Array(mapArena(4));
let sum = 0;
for (let i = 0; i < 4096; i++) sum += view[i];
new DataView(view.buffer).setUint32(2 * 2 ** 20, sum, true);
process.stdout.write(String(view.byteLength));
`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit', 'ignore', arena.fd],
  });
  closeSync(arena.fd);
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect(code).toBe(0);
  expect(out).toBe(String(4 * MiB));
  let sum = 0;
  for (let i = 0; i < 4096; i++) sum += i & 0xff;
  expect(new DataView(arena.buffer).getUint32(2 * MiB, true)).toBe(sum);
});
