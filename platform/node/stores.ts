/**
 * The node's stores and the parts that hold state beside them, opened in the order a start needs:
 * Redis checked, the data dir made the node's own, then the registry, artifact store, cluster
 * membership, runners (their spare warming) and secrets.
 */
import { randomUUID } from 'node:crypto';
import { chmod, mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';

import type { RunnerHost } from '../../runtime/index.js';
import { setIntraOpThreads } from '../../runtime/index.js';
import type { ArtifactStore } from '../artifacts/index.js';
import { createArtifactStore } from '../artifacts/index.js';
import { Cluster } from '../cluster/index.js';
import type { Config } from '../config/index.js';
import { FunctionLogs } from '../functions/index.js';
import { checkNoEviction } from '../jobs/index.js';
import type { Logger } from '../log/index.js';
import type { Registry } from '../registry/index.js';
import { createRegistry } from '../registry/index.js';
import { createSecretStore } from '../secrets/index.js';
import { createRunners } from './runners.js';

export interface Stores {
  /** Names this node in the cluster and in the job records it writes. */
  nodeId: string;
  registry: Registry;
  artifacts: ArtifactStore;
  cluster: Cluster | undefined;
  functionLogs: FunctionLogs;
  runners: RunnerHost | undefined;
  /** Settles once the spare runner is up (undefined without runners). */
  spareUp: Promise<void> | undefined;
  secrets: ReturnType<typeof createSecretStore>;
}

/**
 * The data dir is the node's alone (0700, whatever it was made with): records, secrets and the
 * sealing key in it are 0600 besides; artifacts stay readable (0644) because runners of other uids
 * read them through the hard links in their own folders — the only path to them, as no one else
 * may pass through the data dir.
 */
async function secureDataDir(dir: string, log: Logger): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700).catch((error: NodeJS.ErrnoException) => {
    // A volume made by someone else (a Kubernetes emptyDir is root's, 0777): its files are still
    // the node's own, 0600, and runners read nothing outside their folders (the jail).
    if (error.code !== 'EPERM') throw error;
    log.warn({ dataDir: dir }, 'the data dir belongs to another user: it stays as it is (not 0700)');
  });
}

/** The longest a starting node waits for its registry's connection (slow to connect: it starts, and says so; down: checkNoEviction refused it). */
const REGISTRY_WAIT_MS = 5000;

export async function openStores(config: Config, log: Logger, logOf: (component: string) => Logger): Promise<Stores> {
  if (config.redisUrl) await checkNoEviction(config.redisUrl);
  await secureDataDir(config.dataDir, log);
  setIntraOpThreads(config.intraOpThreads);
  const registry = createRegistry(config);
  // Ready as soon as its stores answer: not before its registry's connection is up (a node that
  // listed its functions to warm before, on a fresh Redis connection, found "Redis not answering").
  await registry.opened?.(REGISTRY_WAIT_MS);
  const artifacts = createArtifactStore(config, (sha256, actual) =>
    logOf('artifacts').error({ sha256, actual }, 'artifact refused: its bytes do not match its hash'),
  );
  const nodeId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const cluster = config.redisUrl
    ? new Cluster({ redisUrl: config.redisUrl, prefix: config.redisPrefix, nodeId })
    : undefined;
  const functionLogs = new FunctionLogs();
  const runners = await createRunners(config, functionLogs, logOf('runner'));
  // The node is ready once its spare runner is up, so its first cold start does not wait for one —
  // but never later than SPARE_WAIT_MS (./warm-up.ts): a spare that neither starts nor exits must
  // not hold the node.
  const spareUp = runners?.warm();
  const secrets = createSecretStore(config);
  return { nodeId, registry, artifacts, cluster, functionLogs, runners, spareUp, secrets };
}
