/**
 * Admission: whether a call may go on — now, once the node serves, or not at all. Every call that
 * runs a function passes it once, at its transport's intake, through Kserve.admit: HTTP's hot routes
 * (function URLs and KServe infer) before they read the body, gRPC's ModelInfer and ModelStreamInfer
 * before they read a request's tensors.
 */
import { UnavailableError } from '../../sdk/errors.js';

/** Whether a request may go on now (undefined), or once a promise settles: Readiness.admit. */
export type Admit = (options: { deadline?: number; signal?: AbortSignal }) => Promise<void> | undefined;

/** An Admit for a node that holds nothing: a request to one that is not ready is refused. */
export function refuseUnlessReady(ready: () => boolean): Admit {
  return () =>
    ready() ? undefined : Promise.reject(new UnavailableError('this node is not ready (starting or draining)'));
}
