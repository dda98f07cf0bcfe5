export { FunctionService } from './function-service.js';
export type { FunctionServiceOptions } from './function-service.js';
export { callPool, PoolSet } from './pool-set.js';
export type { PoolSetOptions, PoolSummary, ServingPool } from './pool-set.js';
export { RecordCache } from './records.js';
export { FunctionLogs } from './function-logs.js';
export type { LogEntry, LogSource } from './function-logs.js';
export { FunctionSeries, SERIES_LENGTH } from './series.js';
export type { SeriesSample } from './series.js';
