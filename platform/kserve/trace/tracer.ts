/**
 * Tracing of sampled KServe infer requests, as Triton's trace extension writes them (level
 * TIMESTAMPS): per trace, a record of its model and version, then one record per timestamp, in
 * nanoseconds of a monotonic clock (Triton's steady clock; here process.hrtime).
 *
 * The timestamps are those the node measures itself, with Triton's names: HTTP_RECV_START /
 * HTTP_RECV_END (GRPC_WAITREAD_START / GRPC_WAITREAD_END), REQUEST_START, REQUEST_END,
 * HTTP_SEND_START / HTTP_SEND_END (GRPC_SEND_START / GRPC_SEND_END). The queue and compute
 * timestamps (QUEUE_START, COMPUTE_START, COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END) are
 * taken inside the pool — a runner process — and do not come back per request: they are not
 * written, and the statistics extension has their sums per model.
 */
import { clip } from '../setting-bounds.js';
import type { TraceFile, TraceFileLog } from './trace-file.js';
import type { TraceSetting, TraceSettingsAnswer, TraceUpdate, TraceValues } from './trace-settings.js';
import { TraceSettings } from './trace-settings.js';

/** The most a setting's traces waiting for their log_frequency group may hold (bytes). */
const PENDING_MAX = 4 * 2 ** 20;
/** Characters of a caller's model name or request id a trace keeps (the rest cut, marked `…`). */
export const TRACE_TEXT_CHARS = 256;

/** One sampled request's trace: its timestamps as they are taken, written once it ends. */
export class Trace {
  readonly #stamps: string[] = [];
  #version = -1;
  #requestId = '';
  #ended = false;

  constructor(
    readonly id: number,
    readonly model: string,
    readonly setting: TraceSetting,
    readonly tracer: Tracer,
  ) {}

  /** Records timestamp `name` at `ns` (now by default). */
  capture(name: string, ns: bigint = process.hrtime.bigint()): void {
    if (!this.#ended) this.#stamps.push(`{"id":${this.id},"timestamps":[{"name":"${name}","ns":${ns}}]}`);
  }

  /** The version that answered, and the request's own id (its `id` field), once known. */
  identify(version: number, requestId?: string): void {
    this.#version = version;
    if (requestId) this.#requestId = clip(requestId, TRACE_TEXT_CHARS);
  }

  /** Writes the trace (once): its model's record, then its timestamps in the order taken. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const head: Record<string, unknown> = {
      id: this.id,
      model_name: clip(this.model, TRACE_TEXT_CHARS),
      model_version: this.#version,
    };
    if (this.#requestId) head.request_id = this.#requestId;
    this.tracer.write(this.setting, [JSON.stringify(head), ...this.#stamps].join(','));
  }
}

export class Tracer {
  readonly settings: TraceSettings;
  readonly #file: TraceFile | undefined;
  /** Each setting's traces not yet written (log frequency > 0), and their size. */
  readonly #pending = new WeakMap<TraceSetting, { traces: string[]; bytes: number }>();
  readonly #replaced = new WeakSet<TraceSetting>();
  readonly #log: Pick<TraceFileLog, 'info'> | undefined;
  /** Which function each model's own setting was made for (its creation time): settings are not a name's but a function's. */
  readonly #madeFor = new Map<string, string>();
  #nextId = 1;

  /**
   * With no file, nothing can be traced: turning tracing on is refused, as in Triton. `log` hears
   * each change of the settings (an info line: who traces what is the operator's to know).
   */
  constructor(file: TraceFile | undefined, defaults: TraceValues, log?: Pick<TraceFileLog, 'info'>) {
    this.#file = file;
    this.#log = log;
    this.settings = new TraceSettings(defaults, file?.name ?? '', (old) => {
      this.#replaced.add(old);
      this.#flush(old);
    });
  }

  /**
   * A trace for this request of `model`, if its setting samples it (cheap when tracing is off);
   * `createdAt` is the function's of that name now (a setting made for an earlier one is dropped).
   */
  start(model: string, createdAt?: string): Trace | undefined {
    if (createdAt !== undefined) this.forget(model, createdAt);
    const setting = this.settings.of(model);
    return setting.take() ? new Trace(this.#nextId++, model, setting, this) : undefined;
  }

  /**
   * The settings of `model` (undefined: the global ones), after `update` where one is given;
   * `createdAt` is the function's of that name now (a setting made for an earlier one is dropped).
   */
  setting(model: string | undefined, update?: TraceUpdate, createdAt?: string): TraceSettingsAnswer {
    if (model !== undefined && createdAt !== undefined) this.forget(model, createdAt);
    if (!update || update.size === 0) return this.settings.of(model).answer();
    this.settings.update(model, update);
    if (model !== undefined && createdAt !== undefined) this.#madeFor.set(model, createdAt);
    const answer = this.settings.of(model).answer();
    this.#log?.info({ model: model ?? null, settings: Object.fromEntries(answer) }, 'trace settings changed');
    return answer;
  }

  /** Whether `model` has a setting of its own. */
  hasOwn(model: string): boolean {
    return this.settings.has(model);
  }

  /** A trace's records, written as its setting says (Triton's TraceSetting::WriteTrace). */
  write(setting: TraceSetting, records: string): void {
    if (!this.#file) return;
    setting.written++;
    const every = setting.values.logFrequency;
    if (every === 0) {
      this.#file.append(records);
      return;
    }
    const pending = this.#pending.get(setting) ?? { traces: [], bytes: 0 };
    this.#pending.set(setting, pending);
    pending.traces.push(records);
    pending.bytes += Buffer.byteLength(records);
    // Triton writes the group at each log_frequency traces, and when trace_count's last one is in;
    // Hearth also once the group holds PENDING_MAX bytes (a large log_frequency holds no more memory).
    const countDone = setting.remaining === 0 && setting.written === setting.taken;
    const full = pending.traces.length >= every || pending.bytes >= PENDING_MAX;
    if (full || countDone || this.#replaced.has(setting)) this.#flush(setting);
  }

  /**
   * `model`'s function was deleted: its own setting goes (a function created anew under the name,
   * perhaps another tenant's, starts from the global one) — unless it was made for `createdAt`,
   * the function of that name now.
   */
  forget(model: string, createdAt?: string): void {
    const madeFor = this.#madeFor.get(model);
    if (createdAt !== undefined && madeFor === createdAt) return;
    this.#madeFor.delete(model);
    this.settings.forget(model);
  }

  /** Writes what is pending, and settles once every trace is on disk. */
  async close(): Promise<void> {
    for (const s of this.settings.all()) this.#flush(s);
    await this.#file?.close();
  }

  /** Settles once every trace that ended so far is written. */
  flushed(): Promise<void> {
    return this.#file?.flushed() ?? Promise.resolve();
  }

  #flush(setting: TraceSetting): void {
    const pending = this.#pending.get(setting);
    if (!pending?.traces.length) return;
    this.#pending.delete(setting);
    this.#file?.appendIndexed(pending.traces);
  }
}
