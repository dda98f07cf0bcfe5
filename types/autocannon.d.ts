// The part of autocannon's API that bench:serve uses (autocannon ships no types).
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: string;
    body?: string | Buffer;
    headers?: Record<string, string>;
    connections?: number;
    duration?: number;
    timeout?: number;
  }
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
  }
  interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    errors: number;
    non2xx: number;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
