/**
 * Cycles between folders, which dependency-cruiser's `no-cycles` (module to module) does not see:
 * `platform/jobs/index.ts → platform/config.ts → platform/jobs/webhook-policy.ts` is no module
 * cycle, yet jobs/ and the config cannot be understood apart. A unit is a first-level folder of
 * platform/, runtime/ or sdk/ (`platform/jobs`), or a file at their root (`platform/config.ts`);
 * type-only imports count. Run by `npm run arch`; exit 1 with each cycle and one import per edge.
 *
 *   npx tsx tools/folder-cycles.ts
 */
import { cruise } from 'dependency-cruiser';

const LAYERS = ['platform', 'runtime', 'sdk'];

/** The unit a module belongs to, or undefined for modules outside the layers (tests, packages). */
export function unitOf(path: string): string | undefined {
  const [layer, second, ...rest] = path.split('/');
  if (!layer || !LAYERS.includes(layer) || second === undefined) return undefined;
  return rest.length === 0 ? `${layer}/${second}` : `${layer}/${second}/`;
}

/** Strongly connected components of more than one unit (Tarjan), each with its units in order. */
export function cycles(edges: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) connect(v);
  return found;
}

async function main(): Promise<void> {
  const result = await cruise(LAYERS, {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|\\.fixtures|\\.scratch|native/build)/' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
  } as never);
  if (typeof result.output === 'string') throw new Error(result.output);
  const edges = new Map<string, Set<string>>();
  /** One import behind each edge, to name in the report. */
  const witness = new Map<string, string>();
  for (const m of result.output.modules) {
    const from = unitOf(m.source);
    if (!from) continue;
    if (!edges.has(from)) edges.set(from, new Set());
    for (const d of m.dependencies) {
      const to = unitOf(d.resolved);
      if (!to || to === from) continue;
      edges.get(from)!.add(to);
      if (!witness.has(`${from} ${to}`)) witness.set(`${from} ${to}`, `${m.source} → ${d.resolved}`);
    }
  }
  const found = cycles(edges);
  for (const component of found) {
    console.log(`folder cycle: ${component.join(' ↔ ')}`);
    for (const a of component)
      for (const b of component) {
        const w = witness.get(`${a} ${b}`);
        if (w) console.log(`  ${w}`);
      }
  }
  if (found.length > 0) process.exit(1);
  console.log(`✔ no cycles between folders (${edges.size} units)`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) await main();
