/**
 * What a caller is told of an error, and what only the log gets (./caller-error.ts): one account for
 * both transports, each of which maps the code to its own status once (../http/errors.ts,
 * ../grpc/status.ts), and for the errors the jobs record.
 */
export type { ErrorContext, ErrorLog } from './caller-error.js';
export { callerError, headline, isFunctionFailure, markVersion } from './caller-error.js';
export { safeLine } from './safe-line.js';
