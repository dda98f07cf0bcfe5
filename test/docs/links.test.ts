/**
 * The README and docs/ hold together: every relative link in README.md and docs/**\/*.md (images
 * included) reaches a file git tracks — or a folder holding one — and its `#anchor`, where given, a
 * heading of that file as GitHub names it; and every page of docs/ is linked from the README. Links
 * inside code (fenced blocks, `spans`) are text, not links. A page made to hold a broken link, a
 * broken anchor and an unlinked page shows the checks fail where they should.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

import { describe, expect, it } from 'vitest';

import { REPO_ROOT } from '../helpers/fixtures.js';

/** The files git tracks, as paths relative to the repository root. */
const tracked = new Set(
  execFileSync('git', ['ls-files', '-z'], { cwd: REPO_ROOT, encoding: 'utf8' }).split('\0').filter(Boolean),
);
const trackedFolders = new Set(
  [...tracked].flatMap((file) =>
    file
      .split('/')
      .slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
  ),
);

/** A page's lines, those of fenced code blocks blanked (a link or a `#` there is text). */
function outsideFences(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      return '';
    }
    fence = marker;
    return marker === undefined ? line : '';
  });
}

/** A heading's anchor by GitHub's rules: its text, lower case, punctuation and symbols dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a page's headings make, a repeated one numbered as GitHub numbers it (`-1`, `-2`). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of outsideFences(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

interface Link {
  line: number;
  target: string;
}

/** The link targets of a page: inline links and images `[text](target "title")`, and references `[id]: target`. */
function links(markdown: string): Link[] {
  const out: Link[] = [];
  outsideFences(markdown).forEach((line, i) => {
    const text = line.replace(/(`+)[\s\S]*?\1/g, ''); // inline code spans are text
    for (const m of text.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
      out.push({ line: i + 1, target: m[1]!.replace(/^<|>$/g, '') });
    }
    const reference = /^\s{0,3}\[[^\]]+\]:\s*(\S+)/.exec(text);
    if (reference) out.push({ line: i + 1, target: reference[1]! });
  });
  return out;
}

/** What is wrong with a page's relative links, one line each (`page:line target: why`). */
function brokenLinks(page: string, read: (path: string) => string, files: Set<string>, folders: Set<string>): string[] {
  const problems: string[] = [];
  for (const { line, target } of links(read(page))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not a file of this repository
    const [rawPath = '', anchor] = target.split('#', 2) as [string, string | undefined];
    const path = decodeURI(rawPath);
    const file = path === '' ? page : normalize(join(dirname(page), path)).replace(/\/$/, '');
    const where = `${page}:${line} ${target}`;
    if (file.startsWith('..')) problems.push(`${where}: outside the repository`);
    else if (!files.has(file) && !folders.has(file)) problems.push(`${where}: ${file} is not a file git tracks`);
    else if (anchor !== undefined && files.has(file)) {
      if (!file.endsWith('.md')) problems.push(`${where}: an anchor into a file that is not Markdown`);
      else if (!anchors(read(file)).has(decodeURIComponent(anchor)))
        problems.push(`${where}: ${file} has no heading #${anchor}`);
    } else if (anchor !== undefined) problems.push(`${where}: an anchor into a folder`);
  }
  return problems;
}

/** The docs/ pages the README does not link to. */
function unlinkedPages(read: (path: string) => string, files: Set<string>): string[] {
  const linked = new Set(links(read('README.md')).map(({ target }) => normalize(decodeURI(target.split('#')[0]!))));
  return [...files].filter((f) => f.startsWith('docs/') && f.endsWith('.md') && !linked.has(f));
}

const readRepo = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');
const pages = [...tracked].filter((f) => f === 'README.md' || (f.startsWith('docs/') && f.endsWith('.md'))).sort();

describe('the README and docs/', () => {
  it('link only to files git tracks, and to headings those files have', () => {
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.flatMap((page) => brokenLinks(page, readRepo, tracked, trackedFolders))).toEqual([]);
  });

  it('link every page of docs/ from the README', () => {
    expect(unlinkedPages(readRepo, tracked)).toEqual([]);
  });

  it('are checked by rules that fail on a broken link, a broken anchor and an unlinked page', () => {
    const fake: Record<string, string> = {
      'README.md': [
        '# Title',
        '[fine](docs/a.md#a-heading-with-code-and-a-link) [gone](docs/missing.md) [no such heading](docs/a.md#nope)',
        '`[in code](docs/missing.md)`',
        '```md',
        '[in a block](docs/missing.md)',
        '```',
        '[folder](docs/) [web](https://example.com/x.md) [here](#title)',
      ].join('\n'),
      'docs/a.md': '# A page\n\n## A heading: with `code` and a [link](../README.md)!\n\n[back](../README.md#nowhere)',
      'docs/b.md': '# Not linked from the README',
    };
    const files = new Set(Object.keys(fake));
    const folders = new Set(['docs']);
    const read = (path: string) => fake[path] ?? '';
    expect(brokenLinks('README.md', read, files, folders)).toEqual([
      'README.md:2 docs/missing.md: docs/missing.md is not a file git tracks',
      'README.md:2 docs/a.md#nope: docs/a.md has no heading #nope',
    ]);
    expect(brokenLinks('docs/a.md', read, files, folders)).toEqual([
      'docs/a.md:5 ../README.md#nowhere: README.md has no heading #nowhere',
    ]);
    expect(unlinkedPages(read, files)).toEqual(['docs/b.md']);
    expect(slug('The console (`/console`)')).toBe('the-console-console');
    expect(slug('bench:serve')).toBe('benchserve');
    expect([...anchors('## Errors\n### Errors\n```\n# not a heading\n```')]).toEqual(['errors', 'errors-1']);
  });
});
