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
      name: 'llm-stands-alone',
      severity: 'error',
      comment:
        'src/llm is the model call every face uses (the gateway, judges, generation, graders, monitors, ' +
        'simulated users): it must not know who calls it or what is recorded. It imports nothing of the ' +
        'HTTP edge (src/gateway), of recording (src/capture) or of the evaluation engine (src/engine), not ' +
        'even types; what it needs from them is passed in.',
      from: { path: '^src/llm/' },
      to: { path: '^src/(gateway|capture|engine|http|auth)/' },
    },
    {
      name: 'capture-below-gateway',
      severity: 'error',
      comment:
        'src/capture records what happened (task logs, spans, sessions): the gateway hands it records, ' +
        'and OTLP ingest does too. It must not import the HTTP edge that feeds it.',
      from: { path: '^src/capture/' },
      to: { path: '^src/(gateway|http)/' },
    },
    {
      name: 'gateway-is-an-edge',
      severity: 'error',
      comment:
        'src/gateway is the HTTP edge of the model call (routes per dialect: decode → llm → capture → ' +
        'encode). Features call src/llm and read src/capture; only the composition root (src/app.ts, ' +
        'src/ports.ts, src/services.ts) mounts the gateway.',
      from: { path: '^src/', pathNot: '^src/(gateway/|app\\.ts$|ports\\.ts$|services\\.ts$)' },
      to: { path: '^src/gateway/' },
    },
    {
      name: 'mcp-is-an-edge',
      severity: 'error',
      comment:
        'src/mcp is another face of the features, like their REST routes: its tools call the features\' ' +
        'services, and nothing calls it but the composition root (src/app.ts mounts /mcp). A feature that ' +
        'imported it would depend on one of its own faces.',
      from: { path: '^src/', pathNot: '^src/(mcp/|app\\.ts$)' },
      to: { path: '^src/mcp/' },
    },
    {
      name: 'mcp-sdk-only-at-the-edges',
      severity: 'error',
      comment:
        'The MCP SDK (and the HTTP stack it brings) is loaded by the MCP server (src/mcp) and the stdio ' +
        'relay of `evalgate mcp` (src/cli/mcp-relay.ts) alone.',
      from: { path: '^src/', pathNot: '^src/(mcp/|cli/mcp-relay\\.ts$)' },
      to: { path: '@modelcontextprotocol/' },
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
