/**
 * Who may use an artifact. Artifacts are content-addressed and shared (one copy of a model however
 * many tenants upload it), so a sha256 is not a secret: it shows in a function's description, in
 * logs, and for a public model anywhere. A tenant may deploy an artifact only after it has sent its
 * bytes once (its *claim*, written beside the artifact); an upload of an artifact already stored
 * is still hashed in full before it is claimed, and never written over what is there. An admin
 * uses any; the default tenant also uses the artifacts uploaded before tenants (no claim at all).
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';

import { InvalidInputError } from '../../sdk/errors.js';
import { DEFAULT_TENANT } from '../config/index.js';

/** Where the claims live: beside the artifacts, in the same store. */
export interface ArtifactClaims {
  /** Records that `tenant` has sent the artifact's bytes. */
  claim(sha256: string, tenant: string): Promise<void>;
  /** The tenants that have (none: uploaded before tenants, or by nobody). */
  claimants(sha256: string): Promise<string[]>;
}

/** Whether `by` may use the artifact (see above). */
export async function mayUse(
  store: Pick<ArtifactClaims, 'claimants'>,
  by: { tenant: string; admin: boolean },
  sha256: string,
): Promise<boolean> {
  if (by.admin) return true;
  const claimants = await store.claimants(sha256);
  return claimants.includes(by.tenant) || (by.tenant === DEFAULT_TENANT && claimants.length === 0);
}

/** Hashes `body` to the end, keeping nothing; refuses it unless it hashes to `sha256`. Its size. */
export async function checkHashes(body: Readable | AsyncIterable<Uint8Array>, sha256: string): Promise<number> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of body) {
    hash.update(chunk as Uint8Array);
    size += (chunk as Uint8Array).byteLength;
  }
  const actual = hash.digest('hex');
  if (actual !== sha256)
    throw new InvalidInputError(`the bytes hash to ${actual}, not ${sha256}: refused`, { reason: 'sha256' });
  return size;
}
