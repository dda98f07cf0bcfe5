/**
 * Type-checks a function's hook before it is bundled (`hearth deploy`, `hearth dev`), as Modal and
 * BentoML check a service before it ships: a hook that returns `dtype: 'FP33'` or assigns a number
 * to a string is refused with tsc's own messages, file:line, instead of deploying and failing every
 * call.
 *
 * TypeScript (the CLI's pinned dependency) checks the hook with the function folder's own
 * tsconfig.json (`hearth init` writes one; without it, the same options), `@hearth/sdk` resolved to
 * the declarations of the hook SDK the CLI bundles the hook against, whatever the folder has
 * installed. Only the folder's own files are reported: the SDK is not the user's to fix.
 */
import { existsSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The hook SDK's types: its source in the repository, or the declarations beside the bundled CLI. */
const SDK_TYPES = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../hook-sdk.ts' : './hook-types/hook-sdk.d.ts', import.meta.url),
);

/** `hearth init`'s compiler options: what a folder without a tsconfig.json is checked with. */
export const HOOK_COMPILER_OPTIONS = {
  target: 'ES2022',
  module: 'ESNext',
  moduleResolution: 'Bundler',
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
} as const;

export interface TypeProblem {
  /** The file, relative to the function's folder. */
  file: string;
  line: number;
  column: number;
  /** `TS2322`. */
  code: string;
  message: string;
}

/** `hook.ts:12:9 - error TS2322: Type 'number' is not assignable to type 'string'.`, as tsc prints it. */
export function formatProblem(p: TypeProblem): string {
  return `${p.file}:${p.line}:${p.column} - error ${p.code}: ${p.message}`;
}

/** The type errors of `hookFile` and what it imports, in the folder `dir`; none when it checks. */
export async function typecheckHook(dir: string, hookFile: string): Promise<TypeProblem[]> {
  // Loaded when first used: TypeScript takes ~0.3 s to load, and only deploy and dev need it.
  const { default: ts } = await import('typescript');
  const root = resolve(dir);
  const configPath = join(root, 'tsconfig.json');
  let options: import('typescript').CompilerOptions;
  const problems: TypeProblem[] = [];
  const fromDiagnostic = (d: import('typescript').Diagnostic): TypeProblem | undefined => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!d.file || d.start === undefined)
      return { file: relative(root, configPath) || 'tsconfig.json', line: 1, column: 1, code: `TS${d.code}`, message };
    const file = resolve(d.file.fileName);
    // Only the folder's own files: not the SDK, not its node_modules.
    if (!file.startsWith(root + sep) || file.includes(`${sep}node_modules${sep}`)) return undefined;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    return { file: relative(root, file), line: line + 1, column: character + 1, code: `TS${d.code}`, message };
  };
  if (existsSync(configPath)) {
    const read = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
    if (read.error) return [fromDiagnostic(read.error)!];
    const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, configPath);
    const errors = parsed.errors.filter((e) => e.code !== 18003); // "no inputs found": the hook is the input
    if (errors.length > 0) return errors.map(fromDiagnostic).filter((p): p is TypeProblem => p !== undefined);
    options = parsed.options;
  } else {
    options = ts.convertCompilerOptionsFromJson(HOOK_COMPILER_OPTIONS, root).options;
  }
  options = {
    ...options,
    noEmit: true,
    // The SDK the hook is bundled against, not whichever the folder has installed (or none).
    paths: { ...options.paths, '@hearth/sdk': [SDK_TYPES] },
  };
  const program = ts.createProgram({ rootNames: [resolve(root, hookFile)], options });
  for (const d of ts.getPreEmitDiagnostics(program)) {
    if (d.category !== ts.DiagnosticCategory.Error) continue;
    const p = fromDiagnostic(d);
    if (p) problems.push(p);
  }
  return problems;
}
