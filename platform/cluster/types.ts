/** What nodes of a cluster say to each other: their pools, and the calls they forward. */
import type { PoolSummary } from '../../runtime/index.js';
import type { TensorsByName } from '../../sdk/tensor.js';

/** What a node says of one of its pools. */
export interface PoolBrief {
  node: string;
  function: string;
  version: number;
  state: string;
  device: string;
  instances: PoolSummary['instances'];
  queueDepth: number;
  pending: number;
  success: number;
  failure: number;
}

/** What a node says of the calls its traffic split sent to one version (a canary is judged by them). */
export interface RoutedBrief {
  node: string;
  function: string;
  version: number;
  success: number;
  failure: number;
}

export interface ClusterNode {
  id: string;
  http: string;
  startedAt: number;
  seenAt: number;
  pools: PoolBrief[];
  /** Absent from a node of an older Hearth. */
  routed?: RoutedBrief[];
}

/** A call sent to another node: a hook request (invoke) or raw tensors (infer). */
export type Forwarded =
  | { kind: 'invoke'; body: Uint8Array; contentType: string }
  | { kind: 'infer'; tensors: TensorsByName };

export type ForwardedReply =
  | { kind: 'invoke'; body: Uint8Array; contentType: string; version: number }
  | { kind: 'infer'; tensors: TensorsByName };

/** Runs a forwarded call on this node, without forwarding it again. */
export type LocalHandler = (
  name: string,
  version: number,
  call: Forwarded,
  deadline: number | undefined,
) => Promise<ForwardedReply>;
