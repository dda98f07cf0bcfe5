/**
 * Hearth's architecture, checked on every `npm test` (npm run arch):
 *   platform → runtime → native, and sdk (the public contract) under all of them;
 *   no cycles; a folder is entered through its index.ts; only the engine's binding loads the addon;
 *   the transports use the functions through the seam (functions/serving.ts), and HTTP and gRPC stay
 *   apart; the console (a browser page) imports only the SDK's API schemas and event-stream reader.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
/** A dependency that is an error: from modules matching `from`, to modules matching `to`. */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

/** Modules of a folder of `layer` reach another folder of it only through that folder's index.ts. */
const byIndex = (layer, doors = []) => forbid(
  `enter-${layer}-folders-by-index`,
  `Another folder of ${layer}/ is entered through its index.ts, not its internals.`,
  { path: `^${layer}/([^/]+)/` },
  { path: `^${layer}/([^/]+)/.+`, pathNot: [`^${layer}/$1/`, `^${layer}/[^/]+/index\\.ts$`, ...doors] },
);

/** The seam between the transports and the functions: an interface, which FunctionService implements. */
// The seam, and the view of it each caller gets (its tenant's functions only).
const SEAM = '^platform/functions/(serving|tenant-view)\\.ts$';
const TRANSPORTS = '^platform/(http|grpc|kserve)/';

/** Libraries that belong to the platform's adapters and transports only. */
const SERVER_LIBRARIES = 'node_modules/(ioredis|bullmq|@aws-sdk/[^/]+|hono|@hono/[^/]+|@grpc/[^/]+)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    // Type-only imports count: a cycle of types is still two modules that cannot be read apart.
    forbid('no-cycles', 'A cycle means two modules cannot be understood (or loaded) apart.', {}, { circular: true }),
    forbid('runtime-not-platform', 'The data plane (runtime) never reaches into the control plane (platform).', { path: '^runtime/' }, { path: '^platform/' }),
    forbid('sdk-stands-alone', 'The SDK is what users import: it depends on neither runtime nor platform.', { path: '^sdk/' }, { path: '^(runtime|platform)/' }),
    forbid('only-binding-loads-the-addon', 'The .node addon is loaded in one place: runtime/engine/binding.ts.', { pathNot: '^runtime/engine/binding\\.ts$' }, { path: '\\.node$' }),
    byIndex('platform', [SEAM]),
    forbid('transports-use-the-seam', 'HTTP, gRPC and the KServe core reach the functions through functions/serving.ts (ServingFunctions, ManagedFunctions) as a caller sees them (functions/tenant-view.ts), never the service class.', { path: TRANSPORTS, pathNot: '\\.test\\.ts$' }, { path: '^platform/functions/', pathNot: SEAM }),
    forbid('transports-apart', 'HTTP and gRPC share platform/kserve and the seam, not each other.', { path: '^platform/(http|grpc)/' }, { path: '^platform/(grpc|http)/', pathNot: '^platform/$1/' }),
    forbid('console-speaks-the-api', 'The console is a browser page: it reaches the node only through the API, with the SDK\'s schemas (and their one-line texts), event-stream reader and version key.', { path: '^console/' }, { path: '^(platform|runtime|native)/|^sdk/(?!api/(schemas|canary-text)\\.ts$|event-stream\\.ts$|spec/version-key\\.ts$)' }),
    byIndex('runtime'),
    byIndex('runtime/runner'),
    forbid('runner-root-by-index', 'The runner\'s face (index.ts) and entry (runner-main.ts) enter its rooms through their index.ts too.', { path: '^runtime/runner/[^/]+\\.ts$' }, { path: '^runtime/runner/[^/]+/.+', pathNot: '^runtime/runner/[^/]+/index\\.ts$' }),
    // hearth bench's gRPC load (sdk/bench/grpc-target.ts) is a client of the node, as Triton's perf_analyzer is: loaded only for --protocol grpc.
    forbid('servers-stay-in-platform', 'The data plane and the public SDK never reach Redis, S3, HTTP servers or gRPC: those are the platform\'s adapters (DESIGN.md, ports and adapters).', { path: '^(runtime|sdk)/', pathNot: '^sdk/bench/grpc-target\\.ts$' }, { path: SERVER_LIBRARIES }),
    forbid('functions-use-the-sdk', 'An example function is a folder a user copies: it imports @hearth/sdk (sdk/), never the platform or runtime.', { path: '^functions/' }, { path: '^(platform|runtime|native)/' }),
    forbid('enter-runtime-by-index', 'platform uses runtime through runtime/index.ts (or a folder\'s index.ts).', { path: '^platform/' }, { path: '^runtime/[^/]+/.+', pathNot: '^runtime/[^/]+/index\\.ts$' }),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(\\.fixtures|\\.scratch|native/build)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
  },
};
