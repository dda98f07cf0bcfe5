export { copyOf, ownsWholeBuffer, unfilled } from './bytes.js';
export { batchSignature, checkTensors, ownTensors } from './validate.js';
