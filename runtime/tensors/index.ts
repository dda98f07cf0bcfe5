export { batchSignature, checkTensors } from './validate.js';
