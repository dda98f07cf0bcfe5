/** What a bench run is asked for and what it reports (the SDK's `bench()` and `hearth bench`). */

/** Where the load goes: a function URL (through its hook), or the model over KServe v2 HTTP or gRPC. */
export type BenchProtocol = 'function' | 'http' | 'grpc';

/** Where the bodies come from: random of the inputs' dtype and shape, the spec's example, or a file. */
export type BenchInputSource = 'random' | 'example' | 'file';

export interface BenchOptions {
  /** The function or model. */
  name: string;
  /** The node's HTTP URL (default HEARTH_URL, else http://127.0.0.1:8000). */
  url?: string;
  /** The node's gRPC address, host:port (default: the URL's host, port 8001). */
  grpcUrl?: string;
  /** An API key (default HEARTH_API_KEY). */
  apiKey?: string;
  /** For an https node: a CA file (PEM) to trust, a client certificate and key (HEARTH_CA_FILE, HEARTH_CLIENT_CERT, HEARTH_CLIENT_KEY). */
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  protocol?: BenchProtocol;
  /**
   * Any HTTP route instead (`/predict`): POST url+path with `bodies`, no spec read and no server
   * split — to load a server that is not Hearth, or to compare with another tool on the same route.
   */
  path?: string;
  /** A version (function URL `/versions/V`, KServe `/versions/V`) instead of the traffic split. */
  version?: number;
  /** Closed loop: each step keeps exactly this many requests in flight, on as many connections. */
  concurrency?: number[];
  /** Open loop: each step sends at this many requests a second, whatever the answers do. */
  rate?: number[];
  /** Rate mode's most requests in flight (and connections); a send that finds them all busy waits and is late. */
  maxInFlight?: number;
  /** Each step lasts this long (ms)… */
  durationMs?: number;
  /** …or sends exactly this many requests. */
  requests?: number;
  /** Before each step, load not counted (ms; 0 for none). */
  warmupMs?: number;
  /** A request's deadline (ms). */
  timeoutMs?: number;
  /** KServe HTTP bodies: JSON, or Triton's binary tensor extension (the default, as perf_analyzer). */
  format?: 'json' | 'binary';
  /** Where bodies come from (default: the file if given, else the spec's example for a function with a hook, else random). */
  input?: BenchInputSource;
  /** Bodies read from a file: its text or bytes (`inputFile` reads it for you, bounded). */
  bodies?: BenchBody[];
  /** Called as a step runs (progress) and when it ends. */
  onProgress?: (event: BenchProgress) => void;
}

/** One request body as sent, with its content type (and for binary KServe, its header's length). */
export interface BenchBody {
  bytes: Uint8Array;
  contentType: string;
  headerLength?: number;
}

export type BenchProgress =
  | { kind: 'warmup'; step: string }
  | { kind: 'step'; step: string; done: number; total?: number; elapsedMs: number; totalMs?: number }
  | { kind: 'stepDone'; step: string; result: BenchStep };

/** The server's own split of a step's requests (Triton's statistics deltas), in µs a request. */
export interface ServerSplit {
  /** Requests the server counted as successes / failures during the step. */
  success: number;
  failure: number;
  /** Whole request on the server (from the statistics' success duration). */
  requestUs?: number;
  queueUs?: number;
  computeInputUs?: number;
  computeInferUs?: number;
  computeOutputUs?: number;
  /** The hook's pre and post (function URLs; from the node's pool counters). */
  preUs?: number;
  postUs?: number;
}

export interface BenchStep {
  /** `c=8` or `rate=100`. */
  step: string;
  concurrency?: number;
  rate?: number;
  /** Requests answered (successes and errors) and how long the step took. */
  requests: number;
  ok: number;
  /** Errors by code: an HTTP status (`400`), a gRPC status name (`INVALID_ARGUMENT`), or a socket error. */
  errors: Record<string, number>;
  /** One message for each error code (the first seen, cut to 200 characters). */
  errorMessages: Record<string, string>;
  seconds: number;
  reqPerS: number;
  /** Latency of successful requests, ms (nearest-rank percentiles over every sample). */
  latencyMs: { p50?: number; p90?: number; p99?: number; mean?: number; max?: number };
  /** Rate mode: sends that went out more than 1 ms after their time. */
  late?: number;
  /** This client's CPU (user + system) per request, µs: its own overhead. */
  clientCpuUs: number;
  /** The same as a share of one core over the step (%): near 100, the client, not the server, set the pace. */
  clientCpuPercent: number;
  server?: ServerSplit;
}

export interface BenchReport {
  name: string;
  protocol: BenchProtocol;
  target: string;
  input: BenchInputSource;
  mode: 'concurrency' | 'rate';
  steps: BenchStep[];
}
