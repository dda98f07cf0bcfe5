export { parseTextFormat, TextFormatError } from './text-format.js';
export type { TextMessage, TextValue } from './text-format.js';
export { DATA_TYPES } from './fields.js';
export { tritonConfigToSpec } from './triton-config.js';
export type { TritonConvertOptions } from './triton-config.js';
export { loadTritonModelFolder, realInside, servedVersions } from './model-folder.js';
export type { TritonModelFolder } from './model-folder.js';
export type { VersionPolicy } from './version-policy.js';
