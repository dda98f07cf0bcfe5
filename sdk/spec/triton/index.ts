export { DATA_TYPES } from './fields.js';
export { jsonConfigToMessage } from './json-config.js';
export type { TritonModelFolder } from './model-folder.js';
export { loadTritonModelFolder, realInside, servedVersions } from './model-folder.js';
export type { TextMessage, TextValue } from './text-format.js';
export { parseTextFormat, TextFormatError } from './text-format.js';
export type { TritonConvertOptions } from './triton-config.js';
export { tritonConfigToSpec, tritonMessageToInput } from './triton-config.js';
export type { VersionPolicy } from './version-policy.js';
