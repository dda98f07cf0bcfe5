export { Cluster } from './cluster.js';
export type { ClusterOptions } from './cluster.js';
export type { ClusterNode, Forwarded, ForwardResult, LocalHandler, PoolBrief } from './types.js';
