export type { ScaleDecision, ScaleSample, ScalingPolicy } from './autoscaler.js';
export { ScaleDecider } from './autoscaler.js';
export type { AutoscaleLoopOptions, ScalablePool, ScalablePools } from './loop.js';
export { AutoscaleLoop } from './loop.js';
