/**
 * Functions and their versions: deploy, list, describe, delete, the traffic split and its rollback,
 * scaling in place, and a function's time series.
 */
import type {
  CanaryRequest,
  DeployResult,
  FunctionInfo,
  FunctionListEntry,
  RollbackResult,
  ScalingRequest,
  ScalingResult,
  SeriesSample,
} from '../api/index.js';
import {
  DeployResultSchema,
  FunctionInfoSchema,
  FunctionListSchema,
  RollbackResultSchema,
  ScalingResultSchema,
  SeriesResultSchema,
  TrafficResultSchema,
} from '../api/index.js';
import type { FunctionSpecInput } from '../spec/function-spec.js';
import type { Transport } from './transport.js';
import { check, parsed } from './transport.js';

/** The artifacts a version is made of, by sha256 (uploaded first: ./artifacts.ts). */
export interface DeployArtifacts {
  model: string;
  hook?: string;
}

/** How a new version takes traffic: all of it (the default), none (`keepTraffic`), or a canary's share. */
export interface DeployOptions {
  keepTraffic?: boolean;
  canary?: CanaryRequest;
}

const functionPath = (name: string): string => `/api/v1/functions/${encodeURIComponent(name)}`;

export async function deploy(
  node: Transport,
  spec: FunctionSpecInput | Record<string, unknown>,
  artifacts: DeployArtifacts,
  options: DeployOptions,
): Promise<DeployResult> {
  const body = {
    spec,
    artifacts,
    ...(options.keepTraffic ? { keepTraffic: true } : {}),
    ...(options.canary ? { canary: options.canary } : {}),
  };
  const r = await node.send('/api/v1/functions', {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  // 422 (the version failed to load) still carries the version and its reason.
  if (r.status === 422) return parsed(DeployResultSchema, await r.json(), 'a deploy');
  return parsed(DeployResultSchema, await (await check(r)).json(), 'a deploy');
}

export async function list(node: Transport): Promise<FunctionListEntry[]> {
  return (await node.json(FunctionListSchema, '/api/v1/functions')).functions;
}

export function describe(node: Transport, name: string): Promise<FunctionInfo> {
  return node.json(FunctionInfoSchema, functionPath(name));
}

export async function remove(node: Transport, name: string): Promise<void> {
  await node.request(functionPath(name), { method: 'DELETE' });
}

export function setTraffic(
  node: Transport,
  name: string,
  traffic: Record<string, number>,
): Promise<{ name: string; traffic: Record<string, number> }> {
  return node.post(TrafficResultSchema, `${functionPath(name)}/traffic`, { traffic }, 'PUT');
}

export function rollback(node: Transport, name: string): Promise<RollbackResult> {
  return node.post(RollbackResultSchema, `${functionPath(name)}/rollback`, {});
}

export function scale(
  node: Transport,
  name: string,
  scaling: Omit<ScalingRequest, 'version'>,
  version: number | undefined,
): Promise<ScalingResult> {
  return node.post(
    ScalingResultSchema,
    `${functionPath(name)}/scaling`,
    { ...scaling, ...(version === undefined ? {} : { version }) },
    'PATCH',
  );
}

export async function series(
  node: Transport,
  name: string,
  version: number | undefined,
): Promise<Record<string, SeriesSample[]>> {
  const q = version === undefined ? '' : `?version=${version}`;
  return (await node.json(SeriesResultSchema, `${functionPath(name)}/series${q}`)).versions;
}
