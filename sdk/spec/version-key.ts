/**
 * How a function version is named wherever one stands for it — pools, leases, counters, logs,
 * series: `name@version`. A function's name cannot contain `@` (FUNCTION_NAME in spec-parts.ts), so the key parses back.
 */
export const versionKey = (name: string, version: number | string): string => `${name}@${version}`;

/** The function a version key belongs to. */
export const functionOfKey = (key: string): string => key.slice(0, key.lastIndexOf('@'));
