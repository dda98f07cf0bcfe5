/**
 * Where webhooks may go. A webhook URL comes from a caller, and the node calls it from inside the
 * deployment: without a policy it is a way to reach the node's loopback, the private network or a
 * cloud metadata service. So, by default: https only; no loopback, private, link-local, CGNAT,
 * multicast or metadata address — checked on the URL and again on every address its host resolves
 * to at connect time (so a DNS name cannot point there later); and redirects are never followed.
 * HEARTH_WEBHOOK_ALLOW_HOSTS names hosts exempt from all of that (tests, private deployments).
 */

import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP } from 'node:net';

import { InvalidInputError } from '../../sdk/errors.js';

export interface WebhookPolicy {
  /** Hostnames or IP literals that may be called whatever they resolve to, over http too. */
  allowHosts: readonly string[];
}

const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['fd00:ec2::', 64],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv6');

/** Loopback, private, link-local (cloud metadata), CGNAT, multicast and reserved addresses. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  return mapped ? BLOCKED.check(mapped, 'ipv4') : BLOCKED.check(address, 'ipv6');
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

function allowed(policy: WebhookPolicy, host: string): boolean {
  return policy.allowHosts.includes(host.toLowerCase());
}

/** Checks a caller's webhook URL before its job is accepted. */
export function checkWebhookUrl(url: string, policy: WebhookPolicy): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError(`the webhook "${url}" is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new InvalidInputError(`the webhook must be an https URL, not ${parsed.protocol}`);
  const host = hostOf(parsed);
  if (allowed(policy, host)) return parsed;
  if (parsed.protocol !== 'https:')
    throw new InvalidInputError('the webhook must be an https URL (http only for hosts in HEARTH_WEBHOOK_ALLOW_HOSTS)');
  if (parsed.username || parsed.password) throw new InvalidInputError('the webhook URL must not carry credentials');
  if (isIP(host) && isBlockedAddress(host))
    throw new InvalidInputError(
      `the webhook's address ${host} is loopback, private, link-local or reserved; such hosts must be listed in HEARTH_WEBHOOK_ALLOW_HOSTS`,
    );
  return parsed;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A dns.lookup for http(s).request that refuses, on every connect, a host that resolves to a
 * blocked address (unless the host is allowed).
 */
export function guardedLookup(
  policy: WebhookPolicy,
): (hostname: string, options: LookupOptions, callback: LookupCallback) => void {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const list = addresses as LookupAddress[];
      const bad = allowed(policy, hostname) ? undefined : list.find((a) => isBlockedAddress(a.address));
      if (bad) {
        const refused = Object.assign(
          new Error(
            `the webhook host ${hostname} resolves to ${bad.address}, a loopback, private, link-local or reserved address`,
          ),
          { code: 'ERR_WEBHOOK_ADDRESS' },
        );
        return callback(refused, '');
      }
      if (options.all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
      callback(null, first.address, first.family);
    });
  };
}

export function parseAllowHosts(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((h) =>
      h
        .trim()
        .toLowerCase()
        .replace(/^\[|\]$/g, ''),
    )
    .filter(Boolean);
}
