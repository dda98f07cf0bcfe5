/** Calls and results as JSON for Redis (BullMQ jobs and pub/sub replies): bytes as base64. */
import type { DType, Tensor, TensorsByName } from '../../sdk/tensor.js';
import { viewAs } from '../../sdk/tensor.js';
import type { Forwarded, ForwardedReply } from './types.js';

interface WireTensor {
  dtype: DType;
  shape: number[];
  b64: string;
}

function encodeTensors(t: TensorsByName): Record<string, WireTensor> {
  return Object.fromEntries(
    Object.entries(t).map(([name, x]) => [
      name,
      {
        dtype: x.dtype,
        shape: x.shape,
        b64: Buffer.from(
          (x.data as ArrayBufferView).buffer,
          (x.data as ArrayBufferView).byteOffset,
          (x.data as ArrayBufferView).byteLength,
        ).toString('base64'),
      },
    ]),
  );
}

function decodeTensors(t: Record<string, WireTensor>): TensorsByName {
  // A fresh copy: a typed array needs its offset aligned to its element size.
  return Object.fromEntries(
    Object.entries(t).map(([name, x]) => [
      name,
      { dtype: x.dtype, shape: x.shape, data: viewAs(x.dtype, new Uint8Array(Buffer.from(x.b64, 'base64'))) } as Tensor,
    ]),
  );
}

/** A call or a result as JSON for Redis: bytes as base64. */
export type Wire =
  | { kind: 'invoke'; body: string; contentType: string; version?: number }
  | { kind: 'infer'; tensors: Record<string, WireTensor> };

export function encode(p: Forwarded | ForwardedReply): Wire {
  return p.kind === 'invoke'
    ? { ...p, body: Buffer.from(p.body).toString('base64') }
    : { kind: 'infer', tensors: encodeTensors(p.tensors) };
}

export function decode<T extends Forwarded | ForwardedReply>(w: Wire): T {
  return (
    w.kind === 'invoke'
      ? { ...w, body: new Uint8Array(Buffer.from(w.body, 'base64')) }
      : { kind: 'infer', tensors: decodeTensors(w.tensors) }
  ) as T;
}

export interface CallData {
  call: Wire;
  replyTo: string;
  /** Date.now() milliseconds after which nobody waits for the answer. */
  deadline?: number;
}

export type Reply =
  | { id: string; ok: true; result: Wire }
  | { id: string; ok: false; error: { error: string; code: string } };
