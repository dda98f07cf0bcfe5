/**
 * A trace's and a trace setting's lifetime: a sampled request whose client hangs up before its
 * answer is still written (as Triton writes it), and a model's own trace settings go with its
 * function — deployed again under the name, it starts from the global settings.
 */
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';

import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { nodeForFile } from '../../helpers/suite.js';
import { waitFor } from '../../helpers/wait.js';
import { jsonPoster, SIMPLE } from './requests.js';

const suite = nodeForFile('trace-lifecycle');
const postJson = jsonPoster(suite);
const SETTING = `/v2/models/${SIMPLE}/trace/setting`;

const deploy = async () => expect((await deployFolder(suite.client, join(TRITON_REPO, SIMPLE))).status).toBe('ready');
beforeAll(deploy);

afterEach(async () => {
  const clear = { trace_level: null, trace_rate: null, trace_count: null, log_frequency: null };
  expect((await postJson(SETTING, clear)).status).toBe(200);
});

const settings = async () => (await (await fetch(`${suite.node.httpUrl}${SETTING}`)).json()) as Record<string, unknown>;

describe('trace lifetimes', () => {
  it('writes the trace of a request whose client hung up before its answer', async () => {
    expect((await postJson(SETTING, { trace_level: ['TIMESTAMPS'], trace_rate: '1', trace_count: '1' })).status).toBe(
      200,
    );
    const { hostname, port } = new URL(suite.node.httpUrl);
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    // Headers and part of a body: the request is sampled, then its client goes.
    socket.write(
      `POST /v2/models/${SIMPLE}/infer HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\ncontent-length: 10000\r\n\r\n{"inputs":`,
    );
    await waitFor('the request sampled', settings, (s) => s.trace_count === '0');
    socket.destroy();
    const file = join(suite.dir, 'node', 'traces', 'trace.json');
    const records = await waitFor(
      'its trace in the trace file',
      async () => JSON.parse(await readFile(file, 'utf8').catch(() => '[]')) as Record<string, unknown>[],
      (r) => r.some((x) => x.model_name === SIMPLE),
      { timeoutMs: 20_000 },
    );
    const head = records.find((x) => x.model_name === SIMPLE)!;
    const names = records
      .filter((r) => r.id === head.id && r !== head)
      .map((r) => (r.timestamps as { name: string }[])[0]!.name);
    expect(names).toEqual(['HTTP_RECV_START']);
  });

  it("drops a model's own trace settings when its function is deleted: deployed again, it follows the global ones", async () => {
    expect((await postJson(SETTING, { trace_rate: '7', log_frequency: '3' })).status).toBe(200);
    expect(await settings()).toMatchObject({ trace_rate: '7', log_frequency: '3' });
    await suite.client.delete(SIMPLE);
    await deploy();
    expect(await settings()).toMatchObject({ trace_rate: '1000', log_frequency: '0' });
  });
});
