/**
 * A command connection (platform/redis/connections.ts) against a real Redis: a command sent while
 * its first connection is still being made waits for it — a fresh connection is not "Redis down"
 * (a starting node logged "the registry (Redis) is not answering: Stream isn't writeable" against a
 * healthy Redis, issue 45) — while a command sent once Redis has gone away still fails at once, and
 * one sent to a Redis that never answers fails rather than waits.
 */
import { describe, expect, it } from 'vitest';

import { commandConnection } from '../../../platform/redis/index.js';
import { freePort, startRedis } from '../../helpers/redis.js';

describe('a command connection', () => {
  it('runs a command sent before its first connection is up', async () => {
    const redis = commandConnection('redis://127.0.0.1:6379');
    redis.on('error', () => undefined);
    try {
      expect(redis.status).not.toBe('ready');
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
  });

  it('fails a command at once once Redis has gone away, and fails one to a Redis that never answered', async () => {
    const server = await startRedis();
    const redis = commandConnection(server.url);
    redis.on('error', () => undefined);
    try {
      expect(await redis.ping()).toBe('PONG');
      await server.stop();
      await expect(redis.ping()).rejects.toThrow(/Stream isn't writeable|Connection is closed|max retries/i);
    } finally {
      redis.disconnect();
    }
    const nowhere = commandConnection(`redis://127.0.0.1:${await freePort()}`);
    nowhere.on('error', () => undefined);
    try {
      await expect(nowhere.ping()).rejects.toThrow();
    } finally {
      nowhere.disconnect();
    }
  });
});
