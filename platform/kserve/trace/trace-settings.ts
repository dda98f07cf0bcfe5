/**
 * Triton's trace settings (its trace extension), transport-neutral: the node's defaults (its
 * operator's), the global settings, and each model's, which override the global ones field by field.
 * An update names the fields it changes; a field given no value (HTTP `null`, gRPC an empty value
 * list) is cleared: a model's goes back to the global value, the global one to the node's default.
 * As in Triton's TraceManager (src/tracer.cc), a model whose fields are partly its own follows later
 * global updates in the fields it left to them, and every update starts its setting's counters anew.
 *
 * What Hearth changes from Triton: `trace_file` is the node operator's (refused here, as Triton
 * refuses it too), `TENSORS` is refused by name (Hearth traces timestamps), an unknown setting or
 * level is refused rather than ignored, and each value is bounded.
 */
import { InvalidInputError, UnsupportedError } from '../../../sdk/errors.js';
import { clip, MAX_SETTINGS, UINT32_MAX } from '../setting-bounds.js';

/** A setting's values as Triton answers them: `trace_level` a list, the others one string each. */
export type TraceSettingsAnswer = [name: string, values: string[]][];

/** An update: each named setting's values, or null to clear it. */
export type TraceUpdate = Map<string, readonly string[] | null>;

type Field = 'level' | 'rate' | 'count' | 'logFrequency';
const FIELDS: readonly Field[] = ['level', 'rate', 'count', 'logFrequency'];

export interface TraceValues {
  /** Whether timestamps are traced (`TIMESTAMPS`); false is Triton's `OFF`. */
  timestamps: boolean;
  /** One request in `rate` is sampled (0: none). */
  rate: number;
  /** Traces still to sample; -1 without end. */
  count: number;
  /** Traces written together to an indexed file (`trace.json.0`, …); 0: each as it ends, to the file. */
  logFrequency: number;
}

/** Triton's defaults (`--trace-config`'s): off, one in 1000, no end, written as they come. */
export const TRACE_DEFAULTS: TraceValues = { timestamps: false, rate: 1000, count: -1, logFrequency: 0 };

const INT32_MAX = 2147483647;
/** Most values one setting may have, and characters one value may have. */
const MAX_VALUES = 8;
const MAX_VALUE_CHARS = 64;

/** One setting in force: its values, which of them are its own, and its sampling counters. */
export class TraceSetting {
  /** Requests seen, traces taken, traces written (Triton's sample_, created_, collected_). */
  seen = 0;
  taken = 0;
  written = 0;
  /** Traces to sample still (Triton's count_, which a read of the settings shows). */
  remaining: number;

  constructor(
    readonly values: TraceValues,
    readonly own: ReadonlySet<Field>,
    /** The trace file's name ('' when the node has nowhere to write traces). */
    readonly file: string,
  ) {
    this.remaining = values.count;
  }

  /** Why this setting cannot trace, or undefined (Triton's TraceSetting::Reason). */
  get invalidReason(): string | undefined {
    if (!this.values.timestamps) return 'tracing is disabled';
    if (this.values.rate === 0) return 'sample rate must be non-zero';
    if (this.file === '') return 'trace file name is not given';
    return undefined;
  }

  /** Whether this request is sampled: every `rate`-th, while traces remain (Triton's SampleTrace). */
  take(): boolean {
    if (!this.values.timestamps || this.values.rate === 0 || this.file === '' || this.remaining === 0) return false;
    if (++this.seen % this.values.rate !== 0) return false;
    if (this.remaining > 0) this.remaining--;
    this.taken++;
    return true;
  }

  answer(): TraceSettingsAnswer {
    const v = this.values;
    return [
      ['trace_level', [v.timestamps ? 'TIMESTAMPS' : 'OFF']],
      ['trace_rate', [String(v.rate)]],
      ['trace_count', [String(this.remaining)]],
      ['log_frequency', [String(v.logFrequency)]],
      ['trace_file', [this.file]],
      ['trace_mode', ['triton']],
    ];
  }
}

/** What an update sets (a field absent is left as it is) and clears. */
interface NewSetting {
  values: Partial<TraceValues>;
  clear: Set<Field>;
}

/** An integer setting's one value, in Triton's words where it refuses one. */
function integer(name: string, values: readonly string[], min: number, max: number): number {
  if (values.length !== 1) throw new InvalidInputError(`expect only 1 value for '${name}'`);
  const text = values[0]!;
  if (!/^[+-]?\d{1,20}$/.test(text.trim()))
    throw new InvalidInputError(`Unable to parse '${name}', got: ${clip(text)} (send an integer as a string)`);
  const n = Number(text.trim());
  if (name === 'trace_count' && n < min)
    throw new InvalidInputError(`Unable to parse '${name}'. Expecting value >= ${min}, got: ${clip(text)}`);
  if (n < min || n > max)
    throw new InvalidInputError(`Unable to parse '${name}', value is out of range [ ${min}, ${max} ], got: ${text}`);
  return n;
}

/** `trace_level`'s values: OFF alone, or TIMESTAMPS; TENSORS refused by name. */
function level(values: readonly string[]): boolean {
  let timestamps = false;
  for (const v of values) {
    if (v === 'OFF') {
      if (values.length !== 1) throw new InvalidInputError("Expect only one trace level 'OFF' is specified");
    } else if (v === 'TIMESTAMPS') timestamps = true;
    else if (v === 'TENSORS')
      throw new UnsupportedError(
        "trace level TENSORS is not supported: Hearth traces TIMESTAMPS only (a request's tensors are its tenant's data and stay out of the node operator's trace file); set trace_level to [\"TIMESTAMPS\"]",
      );
    else throw new InvalidInputError(`unknown trace level '${clip(v)}': Triton's are OFF, TIMESTAMPS and TENSORS`);
  }
  return timestamps;
}

/** An update's settings, checked: what it sets and clears, in Triton's words where it refuses one. */
export function readTraceUpdate(update: TraceUpdate): NewSetting {
  if (update.size > MAX_SETTINGS) throw new InvalidInputError(`a trace update names at most ${MAX_SETTINGS} settings`);
  const out: NewSetting = { values: {}, clear: new Set() };
  for (const [name, values] of update) {
    if (values && (values.length > MAX_VALUES || values.some((v) => v.length > MAX_VALUE_CHARS)))
      throw new InvalidInputError(
        `trace setting '${clip(name)}': at most ${MAX_VALUES} values of ${MAX_VALUE_CHARS} characters`,
      );
    const clear = values === null || values.length === 0;
    const field = FIELD_OF.get(name);
    if (name === 'trace_file')
      throw new UnsupportedError('trace file location can not be updated through network protocol');
    if (name === 'trace_mode') {
      if (clear || (values.length === 1 && values[0] === 'triton')) continue;
      throw new UnsupportedError(
        "trace_mode can not be updated: Hearth writes Triton's own traces (trace_mode triton)",
      );
    }
    if (!field)
      throw new InvalidInputError(
        `unknown trace setting '${clip(name)}': the settings are trace_level, trace_rate, trace_count and log_frequency`,
      );
    if (clear) {
      out.clear.add(field);
      continue;
    }
    if (field === 'level') out.values.timestamps = level(values);
    else if (field === 'rate') out.values.rate = integer(name, values, 0, UINT32_MAX);
    else if (field === 'count') out.values.count = integer(name, values, -1, INT32_MAX);
    else out.values.logFrequency = integer(name, values, 0, UINT32_MAX);
  }
  return out;
}

/** Each setting's field, by its name: a Map, so no inherited property (`__proto__`, `constructor`) names one. */
const FIELD_OF = new Map<string, Field>([
  ['trace_level', 'level'],
  ['trace_rate', 'rate'],
  ['trace_count', 'count'],
  ['log_frequency', 'logFrequency'],
]);
/** Each field's key in TraceValues. */
const KEY: Record<Field, keyof TraceValues> = {
  level: 'timestamps',
  rate: 'rate',
  count: 'count',
  logFrequency: 'logFrequency',
};

/** The node's trace settings: global, and per model. */
export class TraceSettings {
  readonly #default: TraceSetting;
  #global: TraceSetting;
  readonly #models = new Map<string, TraceSetting>();
  /** Models whose setting takes some of its fields from the global one. */
  readonly #following = new Set<string>();
  /** Hears a setting that was replaced: its traces still pending are written. */
  readonly #onReplaced: (old: TraceSetting) => void;

  constructor(defaults: TraceValues, file: string, onReplaced: (old: TraceSetting) => void = () => {}) {
    this.#default = new TraceSetting(defaults, new Set(), file);
    this.#global = new TraceSetting(defaults, new Set(), file);
    this.#onReplaced = onReplaced;
  }

  /** The setting a request for `model` is traced by (the global one, with no model or none of its own). */
  of(model?: string): TraceSetting {
    return (model === undefined ? undefined : this.#models.get(model)) ?? this.#global;
  }

  /** Whether `model` has a setting of its own. */
  has(model: string): boolean {
    return this.#models.has(model);
  }

  /** Every setting in force. */
  all(): TraceSetting[] {
    return [this.#global, ...this.#models.values()];
  }

  /** Whether any setting in force traces timestamps (kept as settings change: read per request). */
  get tracing(): boolean {
    return this.#tracing;
  }
  #tracing = false;

  /** Applies `update` to `model`'s setting (undefined: the global one), as Triton's UpdateTraceSetting. */
  update(model: string | undefined, update: TraceUpdate): void {
    // Checked whole before anything changes: a refused update changes nothing.
    this.#apply(model, readTraceUpdate(update), true);
    // The models that follow the global setting in some fields take its new values (a combination
    // that cannot trace, such as a model's TIMESTAMPS with a global rate of 0, samples nothing).
    if (model === undefined)
      for (const name of [...this.#following]) this.#apply(name, { values: {}, clear: new Set() }, false);
    // Once, after every setting changed: each #apply's own would cost the number of models again.
    this.#retrace();
  }

  /**
   * Drops `model`'s own setting (its function was deleted): a function created anew under the name
   * starts from the global setting. Its traces still pending are written.
   */
  forget(model: string): void {
    const current = this.#models.get(model);
    if (!current) return;
    this.#models.delete(model);
    this.#following.delete(model);
    this.#onReplaced(current);
    this.#retrace();
  }

  #retrace(): void {
    this.#tracing = this.all().some((s) => s.invalidReason === undefined);
  }

  #apply(model: string | undefined, change: NewSetting, check: boolean): void {
    const current = model === undefined ? this.#global : this.#models.get(model);
    const fallback = model === undefined ? this.#default : this.#global;
    const values = { ...fallback.values };
    const own = new Set<Field>();
    for (const f of FIELDS) {
      if (change.clear.has(f)) continue;
      const given = change.values[KEY[f]];
      if (given === undefined && !current?.own.has(f)) continue;
      own.add(f);
      (values as Record<string, unknown>)[KEY[f]] = given ?? current!.values[KEY[f]];
    }
    const setting = new TraceSetting(values, own, fallback.file);
    const reason = setting.invalidReason;
    if (check && reason !== undefined && setting.values.timestamps)
      throw new InvalidInputError(`Attempting to set invalid trace setting :${reason}`);
    if (model === undefined) this.#global = setting;
    else if (own.size === 0) {
      this.#models.delete(model);
      this.#following.delete(model);
    } else {
      this.#models.set(model, setting);
      // The trace file is never a model's own, so a model's setting always follows the global one's.
      this.#following.add(model);
    }
    if (current && current !== setting) this.#onReplaced(current);
  }
}
