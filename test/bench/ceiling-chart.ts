/**
 * The chart of bench:ceiling: Hearth's throughput as a fraction of the bare servers', per route and
 * input, at each concurrency, with the issue's targets marked. An SVG written by hand (no chart
 * library): docs/ceiling.svg, from test/bench/results/ceiling.json.
 *
 * Run: npx tsx test/bench/ceiling-chart.ts [results.json] [out.svg]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { REPO_ROOT } from '../helpers/fixtures.js';

interface Row {
  route: string;
  input: string;
  concurrency: number;
  ratio: number;
}

const COLORS: Record<number, string> = { 1: '#9ecae1', 16: '#4292c6', 64: '#08519c' };
const xmlText = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function ceilingChart(rows: Row[]): string {
  const groups = [...new Set(rows.map((r) => `${r.route} · ${r.input}`))];
  const levels = [...new Set(rows.map((r) => r.concurrency))].sort((a, b) => a - b);
  const bar = 9;
  const groupHeight = levels.length * bar + 10;
  const left = 170;
  const width = 520;
  const top = 40;
  const height = top + groups.length * groupHeight + 40;
  const x = (ratio: number): number => left + Math.min(1, Math.max(0, ratio)) * width;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 90}" height="${height}" font-family="sans-serif" font-size="11">`,
    '<title>bench:ceiling — Hearth throughput as a fraction of a bare server, per route, input and concurrency</title>',
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${left}" y="16" font-size="13" font-weight="bold">Hearth ÷ bare server (throughput), zero-cost model</text>`,
  ];
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(
      `<line x1="${x(t)}" y1="${top - 8}" x2="${x(t)}" y2="${height - 30}" stroke="#ddd"/>`,
      `<text x="${x(t)}" y="${height - 16}" text-anchor="middle" fill="#555">${t}</text>`,
    );
  }
  for (const [t, label] of [
    [0.35, 'JSON target'],
    [0.5, 'binary/gRPC target'],
  ] as const)
    parts.push(
      `<line x1="${x(t)}" y1="${top - 8}" x2="${x(t)}" y2="${height - 30}" stroke="#d62728" stroke-dasharray="4 3"/>`,
      `<text x="${x(t) + 3}" y="${top - 12}" fill="#d62728">${label}</text>`,
    );
  groups.forEach((g, i) => {
    const y0 = top + i * groupHeight;
    parts.push(
      `<text x="${left - 8}" y="${y0 + (levels.length * bar) / 2 + 4}" text-anchor="end">${xmlText(g)}</text>`,
    );
    levels.forEach((c, j) => {
      const row = rows.find((r) => `${r.route} · ${r.input}` === g && r.concurrency === c);
      if (!row) return;
      const y = y0 + j * bar;
      parts.push(
        `<rect x="${left}" y="${y}" width="${Math.max(1, x(row.ratio) - left)}" height="${bar - 1}" fill="${COLORS[c] ?? '#888'}"><title>${xmlText(g)} c=${c}: ${row.ratio}</title></rect>`,
        `<text x="${x(row.ratio) + 4}" y="${y + bar - 1}" font-size="9" fill="#333">${row.ratio}</text>`,
      );
    });
  });
  levels.forEach((c, j) => {
    const lx = left + width + 10;
    const ly = top + j * 16;
    parts.push(
      `<rect x="${lx}" y="${ly}" width="10" height="10" fill="${COLORS[c] ?? '#888'}"/>`,
      `<text x="${lx + 14}" y="${ly + 9}">c=${c}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const input = process.argv[2] ?? join(REPO_ROOT, 'test', 'bench', 'results', 'ceiling.json');
  const out = process.argv[3] ?? join(REPO_ROOT, 'docs', 'ceiling.svg');
  writeFileSync(out, ceilingChart((JSON.parse(readFileSync(input, 'utf8')) as { rows: Row[] }).rows));
  console.log(`wrote ${out}`);
}
