/**
 * Hearth's architecture, checked on every `npm test` (npm run arch):
 *   platform → runtime → native, and sdk (the public contract) under all of them;
 *   no cycles; a folder is entered through its index.ts; only the engine's binding loads the addon.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
/** A dependency that is an error: from modules matching `from`, to modules matching `to`. */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

/** Modules of a folder of `layer` reach another folder of it only through that folder's index.ts. */
const byIndex = (layer) => forbid(
  `enter-${layer}-folders-by-index`,
  `Another folder of ${layer}/ is entered through its index.ts, not its internals.`,
  { path: `^${layer}/([^/]+)/` },
  { path: `^${layer}/([^/]+)/.+`, pathNot: [`^${layer}/$1/`, `^${layer}/[^/]+/index\\.ts$`] },
);

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    forbid('no-cycles', 'A cycle means two modules cannot be understood (or loaded) apart.', {}, { circular: true, dependencyTypesNot: ['type-only'] }),
    forbid('runtime-not-platform', 'The data plane (runtime) never reaches into the control plane (platform).', { path: '^runtime/' }, { path: '^platform/' }),
    forbid('sdk-stands-alone', 'The SDK is what users import: it depends on neither runtime nor platform.', { path: '^sdk/' }, { path: '^(runtime|platform)/' }),
    forbid('only-binding-loads-the-addon', 'The .node addon is loaded in one place: runtime/engine/binding.ts.', { pathNot: '^runtime/engine/binding\\.ts$' }, { path: '\\.node$' }),
    byIndex('platform'),
    byIndex('runtime'),
    forbid('enter-runtime-by-index', 'platform uses runtime through runtime/index.ts (or a folder\'s index.ts).', { path: '^platform/' }, { path: '^runtime/[^/]+/.+', pathNot: '^runtime/[^/]+/index\\.ts$' }),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|\\.fixtures|\\.scratch|native/build)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
  },
};
