/**
 * Webhooks as Standard Webhooks (standardwebhooks.com) define them: headers `webhook-id`,
 * `webhook-timestamp` (seconds) and `webhook-signature: v1,<base64 HMAC-SHA256>` over
 * `{id}.{timestamp}.{body}`, keyed by the secret (`whsec_<base64>`, HEARTH_WEBHOOK_SECRET).
 */
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

import type { JobRecord, WebhookDelivery } from './jobs.js';
import { jobView, webhookShown } from './jobs.js';
import type { WebhookPolicy } from './webhook-policy.js';
import { checkWebhookUrl, guardedLookup } from './webhook-policy.js';

export function secretBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', secretBytes(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The message for a finished job; its id is the job's, so a receiver can drop a repeat. */
export function webhookMessage(record: JobRecord): { id: string; body: string } {
  const body = JSON.stringify({
    type: record.status === 'succeeded' ? 'invocation.succeeded' : 'invocation.failed',
    timestamp: new Date().toISOString(),
    // What the job came to; the record's own delivery tries are not part of the message.
    data: jobView({ ...record, deliveries: undefined }),
  });
  return { id: `job_${record.id}`, body };
}

/**
 * One delivery try; resolves to the receiver's 2xx status, and throws (DeliveryError with the status,
 * when there is one) unless it answers 2xx within 10 s. The URL is checked against
 * the policy again, every address it resolves to is checked as the connection is made, and a
 * redirect is a failure (never followed).
 */
export async function deliver(
  url: string,
  secret: string,
  message: { id: string; body: string },
  policy: WebhookPolicy,
): Promise<number> {
  const target = checkWebhookUrl(url, policy);
  const timestamp = Math.floor(Date.now() / 1000);
  const body = Buffer.from(message.body);
  const status = await new Promise<number>((resolve, reject) => {
    const request = (target.protocol === 'https:' ? httpsRequest : httpRequest)(
      target,
      {
        method: 'POST',
        lookup: guardedLookup(policy),
        headers: {
          'content-type': 'application/json',
          'content-length': String(body.byteLength),
          'webhook-id': message.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': sign(secret, message.id, timestamp, message.body),
        },
        timeout: 10_000,
      },
      (response) => {
        response.resume();
        response.once('end', () => resolve(response.statusCode ?? 0));
        response.once('error', reject);
      },
    );
    request.once('timeout', () => request.destroy(new Error(`webhook ${url} did not answer within 10 s`)));
    request.once('error', reject);
    request.end(body);
  });
  if (status >= 300 && status < 400)
    throw new DeliveryError(`webhook ${url} answered ${status}: redirects are not followed`, status);
  if (status < 200 || status >= 300) throw new DeliveryError(`webhook ${url} answered ${status}`, status);
  return status;
}

export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * One try, recorded: delivers, hands `record` the outcome (the receiver's status, or why it failed),
 * and rethrows a failure so the caller's retry policy applies. The record is not waited for: a
 * delivery is done when the receiver answered (the queue marks it so at once: a node that dies
 * between the two would have it sent again), and a record that fails to be written is not a
 * delivery that failed.
 */
export async function deliverRecorded(
  url: string,
  secret: string,
  message: { id: string; body: string },
  policy: WebhookPolicy,
  record: (d: WebhookDelivery) => Promise<void> | void,
): Promise<void> {
  const at = Date.now();
  const keep = (d: WebhookDelivery) =>
    void Promise.resolve()
      .then(() => record(d))
      .catch(() => undefined);
  // The record is read back through the API: the URL in it goes without its query (a token, often).
  const shown = (text: string) => text.split(url).join(webhookShown(url));
  let status: number;
  try {
    status = await deliver(url, secret, message, policy);
  } catch (error) {
    keep({
      at,
      ok: false,
      ...(error instanceof DeliveryError ? { status: error.status } : {}),
      error: shown((error as Error).message),
    });
    throw error;
  }
  keep({ at, ok: true, status });
}
