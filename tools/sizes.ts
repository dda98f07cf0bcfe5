/**
 * How big the code is allowed to grow, checked on every `npm run arch`: no file over MAX_FILE_LINES
 * lines, no function over MAX_FUNCTION_LINES (STYLE.md: "a file over ~400 lines is usually two
 * files").
 *
 * Files: every file git tracks, except data and generated text (protos, JSON, lock files, the spec's
 * JSON Schema, images) and prose (Markdown). Functions: in the sources (not tests or benchmarks,
 * whose `describe` blocks are lists, not logic) — every function-like node of the TypeScript AST
 * (declarations, methods, constructors, accessors, arrows, function expressions), counted from its
 * first line to its last, nested functions included; and every C++ function, its first and last
 * line as Universal Ctags reports them (`--fields=+ne`).
 *
 *   npx tsx tools/sizes.ts            the limits, exit 1 past one
 *   npx tsx tools/sizes.ts --table    files, lines and the largest file of each folder (a closing note's table)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import ts from 'typescript';

export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 80;

/** Tracked files that are data, generated, prose or another project's unchanged: not code a reader maintains by hand. */
const NOT_CODE =
  /\.(proto|json|md|png|svg|lock|txt)$|(^|\/)(LICENSE|package-lock\.json)$|^platform\/grpc\/proto\/|^test\/fixtures\/triton\//;
/** Where functions are measured: sources, not tests or benchmarks. */
const SOURCE = /^(platform|runtime|sdk|console\/src|functions|native|tools)\/.*\.(ts|tsx|mts|cc|h)$/;
const TEST = /(^test\/|\.test\.tsx?$)/;

export interface Oversize {
  file: string;
  line?: number;
  name?: string;
  lines: number;
}

const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

function tracked(root: string): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\0')
    .filter((f) => f !== '');
}

/** A function-like node's name, as a reader would look for it. */
function nameOf(node: ts.Node): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name && ts.isIdentifier(named.name)) return named.name.text;
  if (named.name && ts.isPrivateIdentifier(named.name)) return named.name.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText();
  if (parent && ts.isPropertyDeclaration(parent)) return parent.name.getText();
  return '(anonymous)';
}

/** TypeScript functions over `max` lines. */
export function longTsFunctions(file: string, text: string, max = MAX_FUNCTION_LINES): Oversize[] {
  const source = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const out: Oversize[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) out.push({ file, line: first + 1, name: nameOf(node), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** C++ functions over `max` lines, by Universal Ctags' start and end lines. */
export function longCppFunctions(root: string, files: string[], max = MAX_FUNCTION_LINES): Oversize[] {
  if (files.length === 0) return [];
  const json = execFileSync(
    'ctags',
    ['--output-format=json', '--fields=+ne', '--kinds-C++=f', '--language-force=C++', '-o', '-', ...files],
    { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  const out: Oversize[] = [];
  for (const line of json.split('\n')) {
    if (!line.trim()) continue;
    const tag = JSON.parse(line) as { name: string; path: string; line: number; end?: number; kind: string };
    if (tag.kind !== 'function' || tag.end === undefined) continue;
    const lines = tag.end - tag.line + 1;
    if (lines > max) out.push({ file: tag.path, line: tag.line, name: tag.name, lines });
  }
  return out;
}

export interface SizeReport {
  files: Oversize[];
  functions: Oversize[];
}

export function measure(root: string): SizeReport {
  const files: Oversize[] = [];
  const functions: Oversize[] = [];
  const cpp: string[] = [];
  for (const file of tracked(root)) {
    if (NOT_CODE.test(file)) continue;
    const text = readFileSync(`${root}/${file}`, 'utf8');
    const lines = lineCount(text);
    if (lines > MAX_FILE_LINES) files.push({ file, lines });
    if (!SOURCE.test(file) || TEST.test(file)) continue;
    if (/\.(cc|h)$/.test(file)) cpp.push(file);
    else functions.push(...longTsFunctions(file, text));
  }
  functions.push(...longCppFunctions(root, cpp));
  return { files, functions };
}

const SPLIT = ['platform', 'runtime', 'sdk'];

/** A file's row in the table: its top folder, or for platform, runtime and sdk their sub-folder. */
function folderOf(file: string): string {
  const [top, sub, ...rest] = file.split('/');
  if (sub === undefined) return '(root)';
  if (!SPLIT.includes(top!)) return top!;
  return rest.length > 0 ? `${top}/${sub}` : `${top} (root files)`;
}

/** Per top-level folder (and its first level for the big ones): files, lines, the largest file. */
export function table(root: string): string {
  const rows = new Map<string, { files: number; lines: number; largest: { file: string; lines: number } }>();
  for (const file of tracked(root)) {
    if (NOT_CODE.test(file)) continue;
    const folder = folderOf(file);
    const lines = lineCount(readFileSync(`${root}/${file}`, 'utf8'));
    const row = rows.get(folder) ?? { files: 0, lines: 0, largest: { file: '', lines: 0 } };
    row.files += 1;
    row.lines += lines;
    if (lines > row.largest.lines) row.largest = { file, lines };
    rows.set(folder, row);
  }
  const out = ['| folder | files | lines | largest |', '| --- | ---: | ---: | --- |'];
  for (const [folder, r] of [...rows].sort(([a], [b]) => a.localeCompare(b)))
    out.push(`| ${folder} | ${r.files} | ${r.lines} | ${r.largest.file} (${r.largest.lines}) |`);
  return out.join('\n');
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const root = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
  if (process.argv.includes('--table')) {
    console.log(table(root));
  } else {
    const { files, functions } = measure(root);
    for (const f of files) console.log(`${f.file}: ${f.lines} lines (at most ${MAX_FILE_LINES})`);
    for (const f of functions)
      console.log(`${f.file}:${f.line}: ${f.name} is ${f.lines} lines (at most ${MAX_FUNCTION_LINES})`);
    if (files.length + functions.length > 0) {
      console.log(`${files.length} files and ${functions.length} functions over the limits (tools/sizes.ts)`);
      process.exit(1);
    }
    console.log(`✔ no file over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES}`);
  }
}
