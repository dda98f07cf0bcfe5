/**
 * The `@hearth/sdk` package's entry (sdk/packages/build.ts): the client, the spec and the API types
 * (./index.ts) with the hook helpers a hook imports (./hook-sdk.ts), so one import serves both.
 */

export * from './image.js';
export * from './index.js';
