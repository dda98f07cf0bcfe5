import { describe, expect, it } from 'vitest';

import { InvalidInputError } from '../errors.js';
import { DeployRequestSchema, JobInfoSchema, parseBody, TrafficRequestSchema } from './index.js';

const sha = 'a'.repeat(64);

describe('the management API contract (sdk/api)', () => {
  it('takes a deploy body with a model (and maybe a hook) named by sha256', () => {
    const body = parseBody(DeployRequestSchema, { spec: { name: 'f' }, artifacts: { model: sha, hook: sha } });
    expect(body.artifacts).toEqual({ model: sha, hook: sha });
  });

  it('refuses a deploy body without artifacts, or with an artifact that is not a sha256, saying which', () => {
    expect(() => parseBody(DeployRequestSchema, undefined)).toThrow(/send \{"spec"/);
    expect(() => parseBody(DeployRequestSchema, { spec: {} })).toThrow(/"artifacts"/);
    expect(() => parseBody(DeployRequestSchema, { spec: {}, artifacts: { model: 'x' } })).toThrow(
      /artifacts\.model must be 64 lowercase hex digits/,
    );
    expect(() => parseBody(DeployRequestSchema, { spec: {}, artifacts: { model: sha, hook: 7 } })).toThrow(
      InvalidInputError,
    );
  });

  it('takes a traffic split of numbers only', () => {
    expect(parseBody(TrafficRequestSchema, { traffic: { 1: 90, 2: 10 } }).traffic).toEqual({ 1: 90, 2: 10 });
    expect(() => parseBody(TrafficRequestSchema, { traffic: { 1: 'all' } })).toThrow(/weight must be a number/);
  });

  it('keeps fields a newer node adds to a response', () => {
    const job = JobInfoSchema.parse({ id: 'j', function: 'f', status: 'queued', attempts: 0, priority: 3 });
    expect(job).toMatchObject({ priority: 3 });
  });
});
