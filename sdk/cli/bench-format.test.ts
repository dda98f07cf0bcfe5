import { describe, expect, it } from 'vitest';

import type { BenchReport } from '../bench/index.js';
import { benchCsv } from './bench-format.js';

const report: BenchReport = {
  name: 'm',
  protocol: 'function',
  target: 'POST /fn/m',
  input: 'random',
  mode: 'rate',
  steps: [
    {
      step: 'rate=10',
      rate: 10,
      requests: 12,
      ok: 9,
      errors: { '400': 2, ECONNRESET: 1 },
      errorMessages: { '400': 'bad, "x"' },
      seconds: 1.2,
      reqPerS: 10,
      latencyMs: { p50: 1.5, p90: 2, p99: 3, mean: 1.75, max: 4 },
      late: 1,
      clientCpuUs: 30.5,
      clientCpuPercent: 3,
      server: {
        success: 9,
        failure: 2,
        requestUs: 100,
        queueUs: 10,
        computeInputUs: 1,
        computeInferUs: 80,
        computeOutputUs: 2,
        preUs: 3,
        postUs: 4,
      },
    },
    {
      step: 'rate=20',
      rate: 20,
      requests: 0,
      ok: 0,
      errors: {},
      errorMessages: {},
      seconds: 0,
      reqPerS: 0,
      latencyMs: {},
      clientCpuUs: 0,
      clientCpuPercent: 0,
    },
  ],
};

describe('benchCsv', () => {
  it('writes a header line and a line per step, empty where a value is absent', () => {
    expect(benchCsv(report).split('\n')).toEqual([
      'step,concurrency,rate,requests,ok,errors,seconds,req_per_s,p50_ms,p90_ms,p99_ms,mean_ms,max_ms,late,' +
        'client_cpu_us,client_cpu_percent,server_success,server_failure,server_request_us,queue_us,' +
        'compute_input_us,compute_infer_us,compute_output_us,pre_us,post_us',
      'rate=10,,10,12,9,400:2;ECONNRESET:1,1.2,10,1.5,2,3,1.75,4,1,30.5,3,9,2,100,10,1,80,2,3,4',
      'rate=20,,20,0,0,,0,0,,,,,,,0,0,,,,,,,,,',
    ]);
  });

  it('quotes a field that holds a comma or a quote', () => {
    const step = { ...report.steps[1]!, step: 'a,"b"' };
    expect(benchCsv({ ...report, steps: [step] }).split('\n')[1]).toMatch(/^"a,""b"""/);
  });
});
