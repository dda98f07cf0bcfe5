/**
 * API keys: HEARTH_API_KEYS (`key1:admin,key2:deploy@team-a,key3:invoke@team-a`) and
 * HEARTH_API_KEYS_FILE (a mounted Kubernetes Secret, say), in that line format or as YAML/JSON:
 *
 * ```yaml
 * keys:
 *   - { key: "…", scope: deploy, tenant: team-a }
 *   - { key: "…", scope: invoke, tenant: team-a, functions: [resnet] }
 * ```
 *
 * Each key belongs to a tenant (`default` when none is named: a node with one team needs none) and
 * has a scope: `invoke` calls the tenant's functions (`functions` limits it to those named), `shm`
 * may also register system shared memory, `deploy` manages the tenant's own functions, secrets and
 * artifacts, `admin` everything, across tenants.
 */
import { readFileSync } from 'node:fs';

import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

import { InvalidInputError } from '../../sdk/errors.js';
import { FUNCTION_NAME } from '../../sdk/spec/function-spec.js';

/** The tenant of keys that name none, and of functions, secrets and artifacts made before tenants. */
export const DEFAULT_TENANT = 'default';
/** A tenant's name: lower case letters, digits and '-', as a Kubernetes namespace's. */
export const TENANT_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export const SCOPES = ['invoke', 'shm', 'deploy', 'admin'] as const;

const ApiKey = z
  .strictObject({
    key: z.string().min(8),
    scope: z.enum(SCOPES),
    tenant: z
      .string()
      .regex(TENANT_NAME, 'a tenant is lower case letters, digits and -, at most 63')
      .default(DEFAULT_TENANT),
    /** An invoke (or shm) key limited to these functions of its tenant. */
    functions: z.array(z.string().regex(FUNCTION_NAME, 'not a function name')).min(1).optional(),
  })
  // What a key could be read to mean but would not hold is refused, not widened.
  .refine((k) => k.functions === undefined || k.scope === 'invoke' || k.scope === 'shm', {
    message: 'only an invoke or shm key names functions (a deploy key manages all its tenant has)',
    path: ['functions'],
  })
  .refine((k) => k.scope !== 'admin' || k.tenant === DEFAULT_TENANT, {
    message: "an admin key reaches every tenant: give it none (a tenant's own manager is a deploy key)",
    path: ['tenant'],
  });
export type ApiKey = z.infer<typeof ApiKey>;

const KeysDocument = z.strictObject({ keys: z.array(z.unknown()) });

/**
 * `key1:admin,key2:invoke,key3:deploy@team-a` (a key without a scope is an admin key, one without a
 * tenant is the default tenant's); in a keys file, entries are also separated by new lines and `#`
 * starts a comment.
 */
export function parseApiKeys(value: string | undefined, from = 'HEARTH_API_KEYS'): ApiKey[] {
  if (!value) return [];
  return value
    .replace(/#.*$/gm, '')
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.lastIndexOf(':');
      // A key alone is an admin key; one that names a tenant but no scope is a mistake, not one.
      const alone = entry.includes('@') ? '' : 'admin';
      const [key, grant] = at > 0 ? [entry.slice(0, at), entry.slice(at + 1)] : [entry, alone];
      const [scope, tenant] = grant.split('@', 2);
      // The key itself is never echoed: at most its first 3 characters.
      const shown = `"${entry.replace(/^(.{3}).*/, '$1…')}"`;
      return checked({ key, scope, ...(tenant === undefined ? {} : { tenant }) }, from, shown);
    });
}

/** HEARTH_API_KEYS_FILE's keys: YAML or JSON (`keys: [...]`), else the line format; the file must be readable. */
export function keysFile(path: string | undefined): ApiKey[] {
  if (!path) return [];
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidInputError(`HEARTH_API_KEYS_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code})`);
  }
  const keys = parseKeysText(text);
  if (keys.length === 0) throw new InvalidInputError(`HEARTH_API_KEYS_FILE: ${path} holds no key`);
  const seen = new Set<string>();
  for (const k of keys) {
    if (seen.has(k.key)) throw new InvalidInputError(`HEARTH_API_KEYS_FILE: ${path} lists a key twice`);
    seen.add(k.key);
  }
  return keys;
}

/** A keys file's text: a document with `keys:` (YAML or JSON), or lines in HEARTH_API_KEYS's format. */
export function parseKeysText(text: string): ApiKey[] {
  const from = 'HEARTH_API_KEYS_FILE';
  const document = structured(text);
  if (document === undefined) return parseApiKeys(text, from);
  const parsed = KeysDocument.safeParse(document);
  if (!parsed.success) throw new InvalidInputError(`${from}: a keys document is \`keys: [{key, scope, tenant}]\``);
  return parsed.data.keys.map((entry, i) => checked(entry, from, `entry ${i + 1}`));
}

/** The text as a YAML/JSON mapping, or undefined where it is not one (the line format). */
function structured(text: string): unknown {
  let value: unknown;
  try {
    value = parseYaml(text, { maxAliasCount: 0 });
  } catch {
    return undefined;
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

function checked(entry: unknown, from: string, where: string): ApiKey {
  const parsed = ApiKey.safeParse(entry);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new InvalidInputError(
    `${from}: each entry must be KEY:SCOPE or KEY:SCOPE@TENANT, with a scope of ${SCOPES.join(', ')}, a key of at least 8 characters and a tenant of lower case letters, digits and - (${issue.path.join('.') || 'entry'}: ${issue.message}; at ${where})`,
  );
}
