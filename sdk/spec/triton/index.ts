export { parseTextFormat, TextFormatError } from './text-format.js';
export type { TextMessage, TextValue } from './text-format.js';
export { DATA_TYPES, loadTritonModelFolder, servedVersions, tritonConfigToSpec } from './triton-config.js';
export type { TritonConvertOptions, TritonModelFolder, VersionPolicy } from './triton-config.js';
