/**
 * A record as a backend reads it back (a file, a Redis value): its JSON, brought up to today's shape.
 *
 * A version's state has typed fields (`waitsFor`, `keepTraffic`); the release before them said it
 * only in the text of the version's reason. Such a record reads here as if it were written today,
 * so nothing else in the node ever parses a reason.
 */
import type { FunctionRecord, FunctionVersion } from './registry.js';

/** How the reason of a version that waits for a GPU node begins (its state: `waitsFor: 'gpu'`). */
export const WAITING_FOR_GPU = 'waiting for a node with a GPU';
/** How that reason ends when the deploy keeps the traffic where it is (its state: `keepTraffic`). */
export const KEEP_TRAFFIC = '; traffic stays where it is';

/** A stored record, parsed and upgraded. */
export function readRecord(json: string): FunctionRecord {
  return upgradeRecord(JSON.parse(json) as FunctionRecord);
}

/** The record with the typed state of versions written before it had any (unchanged if none). */
export function upgradeRecord(record: FunctionRecord): FunctionRecord {
  if (!record.versions.some(untyped)) return record;
  return { ...record, versions: record.versions.map((v) => (untyped(v) ? typed(v) : v)) };
}

/** A version the previous release left waiting for a GPU: pending, saying so only in its reason. */
function untyped(v: FunctionVersion): v is FunctionVersion & { reason: string } {
  return v.status === 'pending' && v.waitsFor === undefined && v.reason?.startsWith(WAITING_FOR_GPU) === true;
}

function typed(v: FunctionVersion & { reason: string }): FunctionVersion {
  return { ...v, waitsFor: 'gpu', ...(v.reason.endsWith(KEEP_TRAFFIC) ? { keepTraffic: true } : {}) };
}
