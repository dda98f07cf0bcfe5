/**
 * Hearth's architecture, checked on every `npm test` (npm run arch):
 *   platform → runtime → native, and sdk (the public contract) under all of them;
 *   no cycles; a folder is entered through its index.ts; only the engine's binding loads the addon.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'A cycle means two modules cannot be understood (or loaded) apart.',
      from: {},
      to: { circular: true, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'runtime-not-platform',
      severity: 'error',
      comment: 'The data plane (runtime) never reaches into the control plane (platform).',
      from: { path: '^runtime/' },
      to: { path: '^platform/' },
    },
    {
      name: 'sdk-stands-alone',
      severity: 'error',
      comment: 'The SDK is what users import: it depends on neither runtime nor platform.',
      from: { path: '^sdk/' },
      to: { path: '^(runtime|platform)/' },
    },
    {
      name: 'only-binding-loads-the-addon',
      severity: 'error',
      comment: 'The .node addon is loaded in one place: runtime/engine/binding.ts.',
      from: { pathNot: '^runtime/engine/binding\\.ts$' },
      to: { path: '\\.node$' },
    },
    {
      name: 'enter-platform-folders-by-index',
      severity: 'error',
      comment: 'Another folder of platform/ is entered through its index.ts, not its internals.',
      from: { path: '^platform/([^/]+)/' },
      to: { path: '^platform/([^/]+)/.+', pathNot: ['^platform/$1/', '^platform/[^/]+/index\\.ts$'] },
    },
    {
      name: 'enter-runtime-folders-by-index',
      severity: 'error',
      comment: 'Another folder of runtime/ is entered through its index.ts, not its internals.',
      from: { path: '^runtime/([^/]+)/' },
      to: { path: '^runtime/([^/]+)/.+', pathNot: ['^runtime/$1/', '^runtime/[^/]+/index\\.ts$'] },
    },
    {
      name: 'enter-runtime-by-index',
      severity: 'error',
      comment: 'platform uses runtime through runtime/index.ts (or a folder\'s index.ts).',
      from: { path: '^platform/' },
      to: { path: '^runtime/[^/]+/.+', pathNot: '^runtime/[^/]+/index\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|\\.fixtures|\\.scratch|native/build)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
  },
};
