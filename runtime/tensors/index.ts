export { copyOf, unfilled } from './bytes.js';
export { batchSignature, checkTensors, ownTensors } from './validate.js';
