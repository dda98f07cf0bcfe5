/** What the node shows beyond one function: the catalog a key may call, the cluster's nodes, live pools, secrets. */
import type { Catalog, NodeInfo, PoolInfo, SecretInfo } from '../api/index.js';
import {
  CatalogSchema,
  NodeListSchema,
  PoolListSchema,
  SecretDeletedSchema,
  SecretInfoSchema,
  SecretListSchema,
} from '../api/index.js';
import type { Transport } from './transport.js';

export function catalog(node: Transport): Promise<Catalog> {
  return node.json(CatalogSchema, '/api/v1/catalog');
}

export async function nodes(node: Transport): Promise<NodeInfo[]> {
  return (await node.json(NodeListSchema, '/api/v1/nodes')).nodes;
}

export async function pools(node: Transport): Promise<PoolInfo[]> {
  return (await node.json(PoolListSchema, '/api/v1/pools')).pools;
}

export function setSecret(node: Transport, name: string, value: string): Promise<SecretInfo> {
  return node.post(SecretInfoSchema, `/api/v1/secrets/${encodeURIComponent(name)}`, { value }, 'PUT');
}

export async function secrets(node: Transport): Promise<SecretInfo[]> {
  return (await node.json(SecretListSchema, '/api/v1/secrets')).secrets;
}

export async function deleteSecret(node: Transport, name: string): Promise<boolean> {
  const r = await node.request(`/api/v1/secrets/${encodeURIComponent(name)}`, { method: 'DELETE' });
  return SecretDeletedSchema.parse(await r.json()).deleted;
}
