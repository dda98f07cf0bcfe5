/** Triton's trace extension: settings (./trace-settings.ts), traces (./tracer.ts), their file (./trace-file.ts). */
export { TRACE_MAX_BYTES, TraceFile } from './trace-file.js';
export type { TraceSettingsAnswer, TraceUpdate, TraceValues } from './trace-settings.js';
export { TRACE_DEFAULTS } from './trace-settings.js';
export { Trace, Tracer } from './tracer.js';
