/**
 * Run as its own process: loads a model (after `prefault` of argv[3] MiB when given) and prints the
 * minor page faults the load took, as JSON.
 */
import { readFileSync } from 'node:fs';

import { devices, loadModel, prefault, setIntraOpThreads } from '../../../../runtime/engine/index.js';

const minorFaults = (): number => Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')[7]);

setIntraOpThreads(1);
devices();
const mib = Number(process.argv[3] ?? 0);
if (mib > 0) prefault(mib * 2 ** 20);
const before = minorFaults();
const model = await loadModel(process.argv[2]!);
console.log(JSON.stringify({ faults: minorFaults() - before, weightBytes: model.info.weightBytes }));
model.dispose();
