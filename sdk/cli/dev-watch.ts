/**
 * What `hearth dev` (platform/entry/dev-main.ts) reloads for, and the call it prints.
 */
import { join } from 'node:path';

import { exampleFileType, type FunctionSpec } from '../spec/index.js';

/** What esbuild may bundle into the hook: its sources and the JSON they import. */
const HOOK_SOURCE = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs|json)$/;

/**
 * Whether a changed file is part of the function: its spec, its model, its example file or a source
 * the hook may bundle. Anything else — export.py, notebooks, data — changes nothing deployed: saving
 * export.py reloads nothing, and the model.pt it then writes reloads once.
 */
export function deploys(file: string, spec: FunctionSpec | undefined): boolean {
  if (file === 'hearth.yaml' || file === 'hearth.yml' || file === 'config.pbtxt') return true;
  if (!spec) return true;
  return file === spec.model || file === spec.exampleFile || HOOK_SOURCE.test(file);
}

/** A shell word: single-quoted, its own single quotes closed and escaped. */
const quoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/** The call a reader can paste: the spec's example (its JSON, or its file) when it has one. */
export function curlLine(url: string, folder: string, spec: FunctionSpec | undefined): string {
  if (spec?.exampleFile)
    return `curl -s ${url} -H ${quoted(`content-type: ${exampleFileType(spec)}`)} --data-binary @${quoted(join(folder, spec.exampleFile))}`;
  const body = spec?.example === undefined ? '…' : JSON.stringify(spec.example);
  return `curl -s ${url} -H 'content-type: application/json' -d ${quoted(body)}`;
}
