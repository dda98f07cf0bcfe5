/** Bounds the trace and logging extensions share (./trace/trace-settings.ts, ./logging.ts). */

/** Most settings one update may name. */
export const MAX_SETTINGS = 16;
/** Triton's uint32 settings' largest value. */
export const UINT32_MAX = 4294967295;
/** Characters of a caller's text an error message or a trace quotes at most. */
export const CLIP_CHARS = 64;

/** `s`, cut to `max` characters (an ellipsis marks a cut). */
export const clip = (s: string, max = CLIP_CHARS): string => (s.length > max ? `${s.slice(0, max)}…` : s);
