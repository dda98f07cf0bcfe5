/**
 * publint over a built package (`npm run packages` runs it on both): what npm, Node and bundlers
 * read of a package.json — exports, types, bin, files, engines — checked against the files the
 * tarball holds. Warnings count as errors (publint's strict mode), and suggestions too.
 */
import { readFile } from 'node:fs/promises';

import { publint } from 'publint';
import { formatMessage } from 'publint/utils';

/** Lints a packed tarball, or the folder `npm pack` would pack; throws with every message. */
export async function lintPackage(source: { tarball: string } | { dir: string }): Promise<void> {
  const { messages, pkg } = await publint({
    ...('tarball' in source
      ? { pack: { tarball: new Uint8Array(await readFile(source.tarball)).buffer } }
      : { pkgDir: source.dir, pack: 'npm' as const }),
    strict: true,
    level: 'suggestion',
  });
  if (messages.length === 0) return;
  const lines = messages.map((m) => `  ${m.type}: ${formatMessage(m, pkg, { color: false }) ?? m.code}`);
  throw new Error(`publint: ${String(pkg.name)}:\n${lines.join('\n')}`);
}
