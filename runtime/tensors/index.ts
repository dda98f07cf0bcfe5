export { batchSignature, checkTensors, ownTensors } from './validate.js';
