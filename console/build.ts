/**
 * Builds the console (`npm run build:console`, run by infra/bootstrap.sh): esbuild bundles
 * src/main.tsx (Preact, uPlot) and its CSS, minified, into console/dist beside index.html, and prints
 * the gzipped size. The node serves console/dist at /console.
 */
import { copyFile, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { build } from 'esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));
const out = join(here, 'dist');
await mkdir(out, { recursive: true });
await build({
  entryPoints: { app: join(here, 'src', 'main.tsx') },
  outdir: out,
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  loader: { '.css': 'css' },
  legalComments: 'none',
  logLevel: 'warning',
});
await copyFile(join(here, 'index.html'), join(out, 'index.html'));
let gzipped = 0;
for (const f of await readdir(out)) gzipped += gzipSync(await readFile(join(out, f))).length;
console.log(`console built in ${out}: ${(gzipped / 1024).toFixed(1)} KB gzipped`);
