/**
 * Webhooks as Standard Webhooks (standardwebhooks.com) define them: headers `webhook-id`,
 * `webhook-timestamp` (seconds) and `webhook-signature: v1,<base64 HMAC-SHA256>` over
 * `{id}.{timestamp}.{body}`, keyed by the secret (`whsec_<base64>`, HEARTH_WEBHOOK_SECRET).
 */
import { createHmac } from 'node:crypto';

import type { JobRecord } from './jobs.js';
import { jobView } from './jobs.js';

export function secretBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', secretBytes(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The message for a finished job; its id is the job's, so a receiver can drop a repeat. */
export function webhookMessage(record: JobRecord): { id: string; body: string } {
  const body = JSON.stringify({ type: record.status === 'succeeded' ? 'invocation.succeeded' : 'invocation.failed', timestamp: new Date().toISOString(), data: jobView(record) });
  return { id: `job_${record.id}`, body };
}

/** One delivery try; throws unless the receiver answers 2xx within 10 s. */
export async function deliver(url: string, secret: string, message: { id: string; body: string }): Promise<void> {
  const timestamp = Math.floor(Date.now() / 1000);
  const response = await fetch(url, {
    method: 'POST',
    body: message.body,
    headers: { 'content-type': 'application/json', 'webhook-id': message.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': sign(secret, message.id, timestamp, message.body) },
    signal: AbortSignal.timeout(10_000),
  });
  await response.arrayBuffer().catch(() => undefined);
  if (!response.ok) throw new Error(`webhook ${url} answered ${response.status}`);
}
