import type { Fields } from './fields.js';

/** Triton's version_policy: which numbered version folders are served. */
export type VersionPolicy = { latest: number } | { all: true } | { specific: number[] };

export function readVersionPolicy(f: Fields | undefined): VersionPolicy | undefined {
  if (!f) return undefined;
  const latest = f.message('latest');
  const all = f.message('all');
  const specific = f.message('specific');
  let policy: VersionPolicy;
  if (latest) {
    policy = { latest: latest.number('num_versions') ?? 1 };
    latest.done();
  } else if (all) {
    policy = { all: true };
    all.done();
  } else if (specific) {
    policy = { specific: specific.numbers('versions') };
    specific.done();
  } else {
    policy = { latest: 1 };
  }
  f.done();
  return policy;
}
