/**
 * Triton's trace and logging extensions over gRPC: `TraceSetting` (a model's settings or the
 * global ones, read, or changed where the request names settings) and `LogSettings`, codecs over
 * the protocol's core (../kserve: Kserve.traceSetting, Kserve.logSettings). A deploy key's, as the
 * repository extension; the core decides what only an admin may change.
 */
import type { Kserve, LogUpdate, TraceUpdate } from '../kserve/index.js';
import type { Calls } from './calls.js';

type SettingValues = Record<string, { value?: string[] } | undefined>;
type LogParameters = Record<string, Record<string, unknown> | undefined>;

/** TraceSettingRequest's settings: an empty value list clears a setting. */
function traceUpdate(settings: SettingValues | undefined): TraceUpdate {
  const update: TraceUpdate = new Map();
  for (const [name, v] of Object.entries(settings ?? {})) {
    const values = (v?.value ?? []).map(String);
    update.set(name, values.length === 0 ? null : values);
  }
  return update;
}

/** LogSettingsRequest's settings: the parameter each sets (none: left as it is). */
function logUpdate(settings: LogParameters | undefined): LogUpdate {
  const update: LogUpdate = new Map();
  for (const [name, v] of Object.entries(settings ?? {})) {
    const choice = v?.parameter_choice;
    const value = typeof choice === 'string' ? v?.[choice] : undefined;
    update.set(
      name,
      typeof value === 'boolean' || typeof value === 'string' ? value : value == null ? null : Number(value),
    );
  }
  return update;
}

export function settingsMethods(kserve: Kserve, { unary }: Calls) {
  return {
    TraceSetting: unary('deploy', async (call, caller) => {
      const model = String(call.request.model_name ?? '');
      const answer = await kserve
        .as(caller)
        .traceSetting(model === '' ? undefined : model, traceUpdate(call.request.settings as SettingValues));
      return { settings: Object.fromEntries(answer.map(([name, value]) => [name, { value }])) };
    }),
    LogSettings: unary('deploy', async (call, caller) => {
      const answer = kserve.as(caller).logSettings(logUpdate(call.request.settings as LogParameters));
      const settings = Object.fromEntries(
        Object.entries(answer).map(([name, v]) => [
          name,
          typeof v === 'boolean'
            ? { bool_param: v }
            : typeof v === 'number'
              ? { uint32_param: v }
              : { string_param: v },
        ]),
      );
      return { settings };
    }),
  };
}
