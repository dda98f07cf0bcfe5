/**
 * Content codings on the hot routes: a gzip or deflate body in (as Triton's HTTP endpoint takes),
 * and a reply compressed when the client's Accept-Encoding asks for it — on libuv's threads.
 */
import { promisify } from 'node:util';
import { deflate, gunzip, gzip, inflate } from 'node:zlib';

import { InvalidInputError } from '../../../sdk/errors.js';
import { tooLarge } from './read-body.js';
import type { Reply } from './request.js';

const codecs = {
  gzip: { decode: promisify(gunzip), encode: promisify(gzip) },
  deflate: { decode: promisify(inflate), encode: promisify(deflate) },
} as const;
type Coding = keyof typeof codecs;

/**
 * A body sent with `Content-Encoding: gzip` or `deflate` (Triton's HTTP endpoint takes both),
 * inflated on libuv's threads and never past the body limit; Inference-Header-Content-Length then
 * counts the inflated bytes, as Triton counts them.
 */
export async function decodeBody(body: Uint8Array, encoding: string | undefined, max: number): Promise<Uint8Array> {
  const coding = encoding?.trim().toLowerCase();
  if (!coding || coding === 'identity') return body;
  if (!(coding in codecs))
    throw new InvalidInputError(`Content-Encoding "${encoding}" is not supported: send gzip, deflate or identity`);
  try {
    return await codecs[coding as Coding].decode(body, { maxOutputLength: max });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(max);
    throw new InvalidInputError(`the ${coding} body could not be decompressed: ${(error as Error).message}`);
  }
}

/** The coding a client's Accept-Encoding asks for among gzip and deflate (q > 0), gzip first. */
function acceptedCoding(accept: string | undefined): Coding | undefined {
  if (!accept) return undefined;
  const weights = new Map<string, number>();
  for (const part of accept.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    weights.set(name!.trim(), q === undefined ? 1 : Number(q));
  }
  return (['gzip', 'deflate'] as const).find((c) => (weights.get(c) ?? weights.get('*') ?? 0) > 0);
}

/** The reply, its body compressed (and its header saying so) when `accept` asks for a coding. */
export async function encodeReply(reply: Reply, accept: string | undefined): Promise<Reply> {
  const coding = acceptedCoding(accept);
  if (coding && reply.body.byteLength > 0) {
    reply.body = await codecs[coding].encode(reply.body);
    reply.headers['content-encoding'] = coding;
  }
  return reply;
}
