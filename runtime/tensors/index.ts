export { copyOf, ownsWholeBuffer, unfilled } from './bytes.js';
export { Extents } from './extents.js';
export { batchSignature, checkTensors, ownTensors } from './validate.js';
