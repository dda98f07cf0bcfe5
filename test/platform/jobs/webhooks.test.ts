/** Where webhooks may go: https only, no loopback/private/metadata address (at submit and at every connect), no redirects. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { describe, expect, it } from 'vitest';

import { deliver } from '../../../platform/jobs/webhook.js';
import { checkWebhookUrl, isBlockedAddress, parseAllowHosts } from '../../../platform/jobs/webhook-policy.js';

const none = { allowHosts: [] };
const message = { id: 'job_1', body: '{}' };

describe('webhook policy', () => {
  it.each([
    '127.0.0.1',
    '127.9.9.9',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd12::1',
    '::ffff:10.0.0.1',
    'fd00:ec2::254',
    'not-an-ip',
  ])('blocks %s', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '172.32.0.1',
    '::ffff:8.8.8.8',
  ])('lets %s through', (address) => {
    expect(isBlockedAddress(address)).toBe(false);
  });

  it('takes https to public hosts and refuses http, credentials and blocked IP literals, unless the host is allowed', () => {
    expect(checkWebhookUrl('https://hooks.example.com/x', none).hostname).toBe('hooks.example.com');
    expect(() => checkWebhookUrl('http://hooks.example.com/x', none)).toThrow(/must be an https URL/);
    expect(() => checkWebhookUrl('https://user:pw@hooks.example.com/x', none)).toThrow(/credentials/);
    expect(() => checkWebhookUrl('https://169.254.169.254/', none)).toThrow(
      /loopback, private, link-local or reserved/,
    );
    expect(() => checkWebhookUrl('https://[::1]:8443/', none)).toThrow(/loopback/);
    expect(
      checkWebhookUrl('http://127.0.0.1:9/x', { allowHosts: parseAllowHosts(' 127.0.0.1 , Hooks.Internal') }).port,
    ).toBe('9');
    expect(parseAllowHosts('[::1], a.b')).toEqual(['::1', 'a.b']);
  });

  it('refuses at connect a host whose name resolves to loopback, before any byte is sent', async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      await expect(deliver(`https://localhost:${port}/x`, 'c2VjcmV0c2VjcmV0c2VjcmV0', message, none)).rejects.toThrow(
        /resolves to 127\.0\.0\.1/,
      );
      expect(hits).toBe(0);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('never follows a redirect', async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data' }).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      await expect(
        deliver(`http://127.0.0.1:${port}/x`, 'c2VjcmV0c2VjcmV0c2VjcmV0', message, { allowHosts: ['127.0.0.1'] }),
      ).rejects.toThrow(/answered 307: redirects are not followed/);
      expect(hits).toBe(1);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
