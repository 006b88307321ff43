/**
 * Import rules for src/ and web/src/, checked by `npm run check` (`depcruise src web/src --config …`).
 *
 * No folder may import one that imports it back. That rule is not here but in scripts/check-folders.mjs
 * (the next step of `npm run check`), which cruises with this same configuration, collapses modules to
 * the top-level folders of src/ (a file directly in src/ is a unit of its own) and reports every cycle
 * between them. dependency-cruiser cannot say it: `scope: 'folder'` rules derive folders at every depth
 * and name a dependency by its target's own folder, so src/a → src/b/y.ts with src/b → src/a/sub/z.ts
 * is no cycle to them, nor is one through a file in src/ itself (the folder `src` has no outside
 * dependencies); `collapse` changes the report, not the validation; and path rules with $1 only look at
 * one edge (or one module-level cycle), not at a folder depending back on another.
 *
 * Module cycles count every import, `import type` too, and so does the folder check: a module or folder
 * that names another's types depends on it. Dynamic `import()` counts as an import everywhere except in
 * `bullmq-only-in-executor`.
 *
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'A module must not import itself back through a chain of imports: a cycle makes load order decide ' +
        'which bindings are still undefined at start-up, and the modules can only be understood, tested ' +
        'and replaced together. Move what both need into a third module, or pass it in.',
      from: { path: '^src/' },
      // Type imports count: a cycle closed by an `import type` is erased before run time, but the two
      // modules still cannot be understood or replaced apart.
      to: { circular: true },
    },
    {
      name: 'no-circular-web',
      severity: 'error',
      comment:
        'The dashboard web app has no import circle at all, type imports included: a page that needs what ' +
        'another page defines takes it from a module of its own (as pages/result-rows.ts).',
      from: { path: '^web/src/' },
      to: { circular: true },
    },
    {
      name: 'no-test-or-bench-in-src',
      severity: 'error',
      comment:
        'Code under src/ is what ships (the build compiles src/ only): importing test/ or bench/ code ' +
        'would break the build output and drag fixtures and mock servers into production.',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'engine-not-on-runs',
      severity: 'error',
      comment:
        'src/engine is the execution layer that src/runs drives (runs/service.ts plans through engine/). ' +
        'The engine must reach runs storage through what the composition root hands it, not by importing ' +
        'src/runs (not even for types), or the two folders become one tangle that can only change together.',
      from: { path: '^src/engine/' },
      to: { path: '^src/runs/' },
    },
    {
      name: 'bullmq-only-in-executor',
      severity: 'error',
      comment:
        'The embedded mode must never load bullmq (and with it ioredis): only files under src/executor/ ' +
        'may import it, and the composition root loads that executor with a dynamic import() only when ' +
        'a queue is configured. Type imports count too (`import { type X }` compiles to `import {} from ' +
        "'bullmq'` under verbatimModuleSyntax, which loads it): keep bullmq's types inside src/executor/.",
      from: { path: '^src/', pathNot: '^src/executor/' },
      to: { path: '(^|/)node_modules/bullmq/|^bullmq$', dynamic: false },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment:
        'An import dependency-cruiser cannot resolve is an edge none of these rules (nor the folder-cycle ' +
        "check) can see. Fix the specifier, or the resolver options below if it is the checker's fault.",
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    // See `import type` too (marked type-only): every rule counts it.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'node', 'default'],
      mainFields: ['module', 'main'],
    },
    skipAnalysisNotInRules: true,
  },
};
