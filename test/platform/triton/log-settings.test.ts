/**
 * Triton's logging extension on a node process, sent as tritonclient's get_log_settings /
 * update_log_settings send it (HTTP: the dict as JSON; gRPC: bool_param, uint32_param,
 * string_param), answered in Triton's shapes — and the settings really change what the node
 * writes: info lines stop and start again, debug lines appear with a verbose level, the time
 * turns ISO 8601. Checked on the lines the node prints, each absence against a later line's
 * presence (the node writes its lines in order), never against a wait.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { Hearth } from '../../../sdk/client.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import type { InferenceClient } from '../../helpers/grpc.js';
import { grpcCall, inferenceClient } from '../../helpers/grpc.js';
import type { NodeProcess } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/node.js';
import { waitFor } from '../../helpers/wait.js';
import { SIMPLE, simpleRequest } from './requests.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-log-settings-'));
let node: NodeProcess;
let rpc: InferenceClient;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  node = await spawnNode(join(dir, 'node'), {}, (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {}
  });
  rpc = inferenceClient(node.grpc);
  expect((await deployFolder(new Hearth({ url: node.url }), join(TRITON_REPO, SIMPLE))).status).toBe('ready');
});
afterAll(async () => {
  rpc?.close();
  node?.child.kill('SIGTERM');
  await node?.exited;
  await rm(dir, { recursive: true, force: true });
});

const post = async (path: string, body: unknown) => {
  const r = await fetch(`${node.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};
/** tritonclient.grpc's update_log_settings: the parameter by the setting's name. */
const rpcLog = (settings: Record<string, boolean | number | string>) =>
  grpcCall(rpc, 'LogSettings', {
    settings: Object.fromEntries(
      Object.entries(settings).map(([k, v]) => [
        k,
        k === 'log_file' || k === 'log_format'
          ? { string_param: v }
          : k === 'log_verbose_level'
            ? { uint32_param: v }
            : { bool_param: v },
      ]),
    ),
  });
const traceRate = (rate: string) => post(`/v2/models/${SIMPLE}/trace/setting`, { trace_rate: rate });
const changedTo = (rate: string) => (l: Record<string, unknown>) =>
  l.msg === 'trace settings changed' && (l.settings as Record<string, string[]>).trace_rate?.[0] === rate;
const seen = async (what: string, match: (l: Record<string, unknown>) => boolean) =>
  (await waitFor(
    what,
    () => lines.find(match),
    (l) => l !== undefined,
  ))!;

describe("Triton's logging extension", () => {
  it("answers get_log_settings in Triton's shapes over HTTP and gRPC", async () => {
    const initial = {
      log_file: '',
      log_info: true,
      log_warning: true,
      log_error: true,
      log_verbose_level: 0,
      log_format: 'default',
    };
    expect((await (await fetch(`${node.url}/v2/logging`)).json()) as unknown).toEqual(initial);
    const settings = (await grpcCall(rpc, 'LogSettings', {})).settings as Record<string, Record<string, unknown>>;
    expect(settings).toMatchObject({
      log_file: { parameter_choice: 'string_param', string_param: '' },
      log_info: { parameter_choice: 'bool_param', bool_param: true },
      log_warning: { parameter_choice: 'bool_param', bool_param: true },
      log_error: { parameter_choice: 'bool_param', bool_param: true },
      log_verbose_level: { parameter_choice: 'uint32_param', uint32_param: 0 },
      log_format: { parameter_choice: 'string_param', string_param: 'default' },
    });
  });

  it("refuses log_file and bad values in Triton's words, changing nothing", async () => {
    const refusals: [Record<string, unknown>, string][] = [
      [{ log_file: '/tmp/elsewhere.log' }, 'log file location can not be updated through network protocol'],
      [{ log_info: 'yes' }, "expect boolean for 'log_info'"],
      [{ log_verbose_level: -1 }, 'log_verbose_level'],
      [{ log_info: false, log_format: 'xml' }, 'invalid argument for log_format, got: xml'],
      [{ log_level: 'debug' }, "unknown log setting 'log_level'"],
    ];
    for (const [body, words] of refusals) {
      const r = await post('/v2/logging', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toContain(words);
    }
    await expect(rpcLog({ log_file: '/tmp/elsewhere.log' })).rejects.toMatchObject({ code: grpc.status.UNIMPLEMENTED });
    await expect(rpcLog({ log_format: 'xml' })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect(((await (await fetch(`${node.url}/v2/logging`)).json()) as { log_info: boolean }).log_info).toBe(true);
  });

  it('silences info lines with log_info false, and writes them again with true', async () => {
    expect(((await rpcLog({ log_info: false })).settings as Record<string, { bool_param: boolean }>).log_info).toEqual(
      expect.objectContaining({ bool_param: false }),
    );
    expect((await traceRate('5')).status).toBe(200);
    expect((await post('/v2/logging', { log_info: true })).body.log_info).toBe(true);
    expect((await traceRate('6')).status).toBe(200);
    await seen('the info line of the second change', changedTo('6'));
    expect(lines.some(changedTo('5'))).toBe(false);
  });

  it('writes debug lines from log_verbose_level 1, and ISO 8601 times with log_format ISO8601', async () => {
    await post(`/v2/models/${SIMPLE}/trace/setting`, { trace_level: ['TIMESTAMPS'], trace_rate: '1' });
    const infer = async () => expect((await post(`/v2/models/${SIMPLE}/infer`, simpleRequest(1))).status).toBe(200);
    // None yet while the file is missing, or caught mid-append (the node writes it in place).
    const traces = () =>
      readFile(join(dir, 'node', 'traces', 'trace.json'), 'utf8')
        .then((t) => (JSON.parse(t) as { model_name?: string }[]).filter((r) => r.model_name).length)
        .catch(() => 0);
    await infer();
    await waitFor('the first trace written', traces, (n) => n === 1);
    expect((await rpcLog({ log_verbose_level: 1 })).settings).toMatchObject({
      log_verbose_level: { uint32_param: 1 },
    });
    await infer();
    await seen('a debug line', (l) => l.msg === 'writing a trace');
    expect(lines.filter((l) => l.msg === 'writing a trace')).toHaveLength(1);
    expect(lines.find((l) => l.msg === 'writing a trace')!.level).toBe(20);

    expect((await post('/v2/logging', { log_verbose_level: 0, log_format: 'ISO8601' })).body.log_format).toBe(
      'ISO8601',
    );
    await traceRate('7');
    const iso = await seen('the line in ISO 8601', changedTo('7'));
    expect(iso.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    await post('/v2/logging', { log_format: 'default' });
    await traceRate('8');
    expect(typeof (await seen('the line in epoch ms', changedTo('8'))).time).toBe('number');
  });
});
