export { Cluster } from './cluster.js';
export type { ClusterNode, ClusterOptions, Forwarded, ForwardResult, LocalHandler, PoolBrief } from './cluster.js';
