export { parseTextFormat, TextFormatError } from './text-format.js';
export type { TextMessage, TextValue } from './text-format.js';
export { tritonConfigToSpec, loadTritonModelFolder } from './triton-config.js';
export type { TritonModelFolder } from './triton-config.js';
