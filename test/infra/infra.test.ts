/**
 * The container image and the Kubernetes, Prometheus and Grafana files in infra/, checked without
 * Docker or a cluster: they parse, every name they reference exists (Services → pods and ports,
 * env → ConfigMaps, Secrets and Hearth's own variables, KEDA → the Deployment, queries → metrics
 * Hearth exports), and the probes answer on a real node.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

import { ConfigSchema, loadConfig } from '../../platform/config/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { REPO_ROOT } from '../helpers/fixtures.js';
import { testNode } from '../helpers/node.js';

type Doc = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: Kubernetes objects of every kind, read as their YAML says
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};

const INFRA = join(REPO_ROOT, 'infra');
const files = ['k8s', 'monitoring'].flatMap((d) =>
  readdirSync(join(INFRA, d))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(INFRA, d, f)),
);
const docs: Doc[] = files.flatMap((file) =>
  parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
    if (d.errors.length) throw new Error(`${file}: ${d.errors[0]!.message}`);
    return d.toJSON() as Doc;
  }),
);
const byKind = (kind: string) => docs.filter((d) => d.kind === kind);
const workloads = docs.filter((d) => d.kind === 'Deployment' || d.kind === 'StatefulSet');
// biome-ignore lint/suspicious/noExplicitAny: a container spec as its YAML says
const containers = (w: Doc): any[] => w.spec.template.spec.containers;
const hearth = byKind('Deployment').find((d) => d.metadata.name === 'hearth-node')!;
const metricNames = new Set((await new Metrics(() => []).registry.getMetricsAsJSON()).map((m) => m.name));
const knownMetric = (name: string) =>
  metricNames.has(name) || metricNames.has(name.replace(/_(bucket|sum|count)$/, ''));
const metricsIn = (query: string) => [...query.matchAll(/\b((?:nv|hearth)_[a-z_]+)\b/g)].map((m) => m[1]!);

describe('infra/', () => {
  it('parses every manifest, each with apiVersion, kind and a name', () => {
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const d of docs) {
      expect(d.apiVersion, JSON.stringify(d).slice(0, 80)).toBeTruthy();
      expect(d.kind).toBeTruthy();
      expect(d.metadata?.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    }
    for (const kind of ['Deployment', 'StatefulSet', 'Service', 'ConfigMap', 'ScaledObject'])
      expect(byKind(kind).length, kind).toBeGreaterThan(0);
  });

  it('points every Service at pods that exist, on ports those pods name', () => {
    for (const svc of byKind('Service')) {
      const target = workloads.find((w) =>
        Object.entries(svc.spec.selector).every(([k, v]) => w.spec.template.metadata.labels[k] === v),
      );
      expect(target, `Service ${svc.metadata.name}`).toBeDefined();
      const ports = containers(target!).flatMap((c) => c.ports ?? []);
      for (const p of svc.spec.ports)
        expect(
          ports.some(
            (cp: { name: string; containerPort: number }) =>
              cp.name === p.targetPort || cp.containerPort === p.targetPort,
          ),
          `${svc.metadata.name}:${p.name}`,
        ).toBe(true);
    }
  });

  it('ships no secret: every key it reads is one the documented `kubectl create secret` makes', () => {
    // The secrets are the operator's; a working key in the repository would be accepted everywhere.
    expect(byKind('Secret')).toEqual([]);
    const header = readFileSync(join(INFRA, 'k8s', 'hearth.yaml'), 'utf8');
    const created = [...header.matchAll(/--from-(?:file|literal)=([\w-]+)=/g)].map((m) => m[1]!);
    expect(header).toContain('kubectl create secret generic hearth-secrets');
    const maps = new Map(byKind('ConfigMap').map((d) => [d.metadata.name, d.data ?? {}]));
    for (const w of workloads) {
      for (const c of containers(w)) {
        for (const from of c.envFrom ?? []) {
          expect(from.secretRef, 'secrets come by key, not whole').toBeUndefined();
          if (from.configMapRef) expect(maps.has(from.configMapRef.name), from.configMapRef.name).toBe(true);
        }
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef;
          if (!ref) continue;
          expect(ref.name).toBe('hearth-secrets');
          expect(created, `${ref.name}/${ref.key}`).toContain(ref.key);
        }
      }
      for (const v of w.spec.template.spec.volumes ?? [])
        for (const item of v.secret?.items ?? []) expect(created, item.key).toContain(item.key);
    }
  });

  it('names only variables Hearth reads, and the node starts with them and a keys file', async () => {
    const maps = new Map(byKind('ConfigMap').map((d) => [d.metadata.name, d.data ?? {}]));
    const container = hearth.spec.template.spec.containers[0];
    const vars = [
      ...container.envFrom.flatMap((f: { configMapRef: { name: string } }) =>
        Object.keys(maps.get(f.configMapRef.name)!),
      ),
      ...container.env.map((e: { name: string }) => e.name),
    ];
    const known = Object.keys(ConfigSchema.shape);
    for (const v of vars) {
      // AWS_* are the AWS SDK's credential chain, which the S3 store uses as it is.
      if (!v.startsWith('AWS_')) expect(known, v).toContain(v);
    }
    const config = maps.get('hearth-config')!;
    // The keys file is where the Secret's volume puts it.
    const mount = container.volumeMounts.find((m: { name: string }) => m.name === 'secrets');
    const volume = hearth.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'secrets');
    expect(config.HEARTH_API_KEYS_FILE).toBe(`${mount.mountPath}/${volume.secret.items[0].path}`);
    const dir = await mkdtemp(join(tmpdir(), 'hearth-infra-keys-'));
    try {
      const keys = join(dir, 'api-keys');
      writeFileSync(keys, 'an-operators-admin-key:admin\n');
      const env = { ...config, HEARTH_API_KEYS_FILE: keys, HEARTH_METRICS_KEY: 'a-metrics-key-of-24-chars' };
      expect(loadConfig(env).apiKeys).toEqual([{ key: 'an-operators-admin-key', scope: 'admin', tenant: 'default' }]);
      // Without the Secret's keys the node, bound to 0.0.0.0, refuses to start.
      expect(() => loadConfig({ ...config, HEARTH_API_KEYS_FILE: undefined })).toThrow(/no API key is set/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('gives the node a GPU, a drain before it is killed, and Redis that never evicts', () => {
    const spec = hearth.spec.template.spec;
    expect(spec.containers[0].resources.limits['nvidia.com/gpu']).toBe(1);
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(120);
    expect(spec.containers[0].lifecycle.preStop).toBeDefined();
    const redis = workloads.find((w) => w.metadata.name === 'hearth-redis')!;
    const args: string[] = containers(redis)[0].args;
    expect(args[args.indexOf('--maxmemory-policy') + 1]).toBe('noeviction');
    expect(args[args.indexOf('--appendonly') + 1]).toBe('yes');
  });

  it('scales the node Deployment on a metric Hearth exports', () => {
    for (const so of byKind('ScaledObject')) {
      expect(byKind('Deployment').map((d) => d.metadata.name)).toContain(so.spec.scaleTargetRef.name);
      for (const t of so.spec.triggers)
        for (const m of metricsIn(t.metadata.query)) expect(knownMetric(m), m).toBe(true);
    }
  });

  it('scrapes the node pods, and charts only metrics Hearth exports', () => {
    const scrape = parse(
      byKind('ConfigMap').find((d) => d.metadata.name === 'prometheus-hearth')!.data!['prometheus.yml']!,
    ) as { scrape_configs: { relabel_configs: { source_labels: string[]; regex: string; action?: string }[] }[] };
    const keep = scrape.scrape_configs[0]!.relabel_configs.filter((r) => r.action === 'keep');
    const pod = hearth.spec.template.metadata;
    expect(pod.labels['app.kubernetes.io/name']).toMatch(new RegExp(`^${keep[0]!.regex}$`));
    expect(pod.annotations['prometheus.io/scrape']).toMatch(new RegExp(`^${keep[1]!.regex}$`));
    expect(pod.annotations['prometheus.io/port']).toBe(String(loadConfig({}).metricsPort));

    const dashboard = JSON.parse(readFileSync(join(INFRA, 'monitoring', 'grafana-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const titles = dashboard.panels.map((p) => p.title.toLowerCase()).join(' | ');
    for (const topic of ['requests', 'latency', 'batch', 'instances', 'cold start', 'queue'])
      expect(titles).toContain(topic);
    for (const p of dashboard.panels)
      for (const t of p.targets)
        for (const m of metricsIn(t.expr)) expect(knownMetric(m), `${p.title}: ${m}`).toBe(true);
  });

  it('builds the image on the PyTorch CUDA runtime image, against its own LibTorch, from paths that exist', () => {
    const dockerfile = readFileSync(join(INFRA, 'docker', 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^ARG PYTORCH_IMAGE=pytorch\/pytorch:[\w.-]+-cuda[\w.-]+-runtime$/m);
    expect(dockerfile).toMatch(/torch\.utils\.cmake_prefix_path/);
    // The libraries the addon's optional parts link (native/CMakeLists.txt), in both stages: built
    // against, and there to load.
    const stages = dockerfile.split(/^FROM /m).slice(2);
    for (const lib of ['libsimdjson-dev', 'libjpeg-dev', 'libpng-dev', 'libwebp-dev'])
      for (const [i, stage] of stages.entries()) expect(stage, `${lib} in stage ${i + 1}`).toContain(lib);
    // Install scripts are skipped, so the hooks' sandbox (a native module) must be built explicitly.
    if (dockerfile.includes('--ignore-scripts')) expect(dockerfile).toMatch(/^RUN npm rebuild isolated-vm\b/m);
    const config = loadConfig({});
    expect(dockerfile).toContain(`EXPOSE ${config.httpPort} ${config.grpcPort} ${config.metricsPort}`);
    for (const [, path] of dockerfile.matchAll(/^COPY (?!--from)(\S+)/gm))
      expect(existsSync(join(REPO_ROOT, path!)), path).toBe(true);
    for (const [, from] of dockerfile.matchAll(/^COPY --from=build \/app\/(\S+)/gm)) {
      if (!from!.startsWith('node_modules'))
        expect(from).toMatch(
          /^(native\/build\/Release\/(hearth_native\.node|hearth-jail|libhearth-template\.so)|dist\/node)$/,
        );
    }
    // It runs the node built as `npm start` builds it (tools/build-node.ts).
    expect(existsSync(join(REPO_ROOT, 'tools', 'build-node.ts'))).toBe(true);
    expect(dockerfile).toMatch(/^RUN node --import tsx tools\/build-node\.ts$/m);
    expect(dockerfile).toContain('CMD ["node", "dist/node/main.mjs"]');
    expect(JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).scripts.start).toBe(
      'tsx tools/build-node.ts && node dist/node/main.mjs',
    );
  });

  it('has probes that a real node answers', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hearth-infra-'));
    const node = await testNode(dir);
    try {
      const c = hearth.spec.template.spec.containers[0];
      for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe]) {
        const r = await fetch(`${node.httpUrl}${probe.httpGet.path}`);
        expect(r.status, probe.httpGet.path).toBe(200);
      }
    } finally {
      await node.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
