export type { ClusterOptions } from './cluster.js';
export { Cluster } from './cluster.js';
export type { ClusterNode, Forwarded, ForwardedReply, LocalHandler, PoolBrief, RoutedBrief } from './types.js';
