/**
 * Fails when two folders import each other: `npm run check` runs this after `depcruise` with the same
 * configuration. A unit is a top-level folder of the cruised directory (src/engine, src/runs, ...); a
 * file directly in it (src/app.ts) is a unit of its own. The modules are collapsed to their units and
 * every strongly connected component of more than one unit is printed with one example import per edge.
 * Every import counts, static or dynamic, `import type` too: a type import is erased before run time,
 * but it still ties the two folders together (neither can be understood, changed or moved alone).
 *
 * dependency-cruiser's own `scope: 'folder'` rules derive folders at every depth and name a dependency by
 * the folder its target sits in directly, so they miss src/a → src/b/y.ts ↔ src/b → src/a/sub/x.ts and
 * cycles through files in src/ itself; `collapse` only changes reporting, not validation.
 *
 *   node scripts/check-folders.mjs [dir, default src] [--config file, default .dependency-cruiser.cjs]
 *
 * Paths are relative to the working directory (as for `depcruise`). Exit 0: no cycle; 1: cycles; 2: the
 * cruise found nothing to check (a wrong directory, or imports that no longer resolve).
 */
import path from 'node:path';
import { cruise } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

function parseArgs(argv) {
  let config = '.dependency-cruiser.cjs';
  let dir = 'src';
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--config') config = argv[++i];
    else dir = argv[i];
  }
  return { config: path.resolve(config), dir: dir.replace(/\/+$/, '') };
}

/** The unit a module belongs to: `src/engine` for src/engine/plan.ts, `src/app.ts` for src/app.ts. */
function unitOf(source, dir) {
  if (!source.startsWith(`${dir}/`)) return null;
  const first = source.slice(dir.length + 1).split('/')[0];
  return `${dir}/${first}`;
}

/** Tarjan's algorithm; returns the components of more than one node, each sorted. */
function cycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node)?.keys() ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node), low.get(to)));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node), index.get(to)));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found.sort((a, b) => a[0].localeCompare(b[0]));
}

const { config, dir } = parseArgs(process.argv.slice(2));
const options = await extractDepcruiseOptions(config);
const tsConfig = options.tsConfig?.fileName ? extractTSConfig(options.tsConfig.fileName) : {};
// Without an outputType the API returns the cruise result as an object (with 'json' it is a string).
const { output } = await cruise([dir], { ...options, validate: false }, {}, { tsConfig });

// unit -> unit -> { count, example: 'from → to' }
// One graph per folder: its units are its direct children (a sub-folder, or a file of its own), and an
// import between modules under two different children is an edge between them. The top level is the
// graph of `dir` itself; each sub-folder's graph finds back-arrows inside a room (a file importing a
// sub-folder that imports the file back) that the module-level rule cannot see.
const graphs = new Map();
let local = 0;
/** The folder both paths are under, and the child of it each is in (null when one is not under dir). */
function split(from, to) {
  if (!from.startsWith(`${dir}/`) || !to.startsWith(`${dir}/`)) return null;
  const a = from.split('/');
  const b = to.split('/');
  let i = 0;
  while (i < a.length - 1 && i < b.length - 1 && a[i] === b[i]) i += 1;
  if (i === a.length - 1 && i === b.length - 1 && a[i] === b[i]) return null;
  const parent = a.slice(0, i).join('/');
  return { parent, from: `${parent}/${a[i]}`, to: `${parent}/${b[i]}` };
}
for (const module of output.modules) {
  if (!module.source.startsWith(`${dir}/`)) continue;
  const top = unitOf(module.source, dir);
  if (!graphs.has(dir)) graphs.set(dir, new Map());
  if (!graphs.get(dir).has(top)) graphs.get(dir).set(top, new Map());
  for (const dependency of module.dependencies) {
    // Type imports count: a folder that names another's types depends on it as much as one calling it.
    if (dependency.couldNotResolve || !unitOf(dependency.resolved, dir)) continue;
    local += 1;
    const edge = split(module.source, dependency.resolved);
    if (!edge || edge.from === edge.to) continue;
    if (!graphs.has(edge.parent)) graphs.set(edge.parent, new Map());
    const graph = graphs.get(edge.parent);
    if (!graph.has(edge.from)) graph.set(edge.from, new Map());
    const edges = graph.get(edge.from);
    const entry = edges.get(edge.to) ?? { count: 0, example: `${module.source} → ${dependency.resolved}` };
    entry.count += 1;
    edges.set(edge.to, entry);
  }
}

// (An empty graph has no local imports either: \`local\` counts only imports from a unit in the graph.)
if (local === 0) {
  console.error(`check-folders: no imports between modules under ${dir}/ were found; nothing was checked.`);
  process.exit(2);
}

const found = [...graphs].flatMap(([parent, graph]) =>
  cycles(graph).map((component) => ({ parent, component })),
);
if (found.length === 0) {
  const tops = graphs.get(dir)?.size ?? 0;
  console.log(
    `check-folders: no import cycles between the ${tops} top-level units of ${dir}/, nor inside any of its ` +
      `${graphs.size - 1} folders.`,
  );
  process.exit(0);
}

for (const { parent, component } of found) {
  const graph = graphs.get(parent);
  console.log(`\n  error no-folder-cycle: ${component.join(' ↔ ')}`);
  for (const from of component) {
    for (const to of component) {
      const edge = graph.get(from)?.get(to);
      if (!edge) continue;
      const imports = edge.count === 1 ? '1 import' : `${edge.count} imports`;
      console.log(`      ${from} → ${to} (${imports}), e.g. ${edge.example}`);
    }
  }
}
console.log(
  `\nx ${found.length} folder cycle${found.length === 1 ? '' : 's'} in ${dir}/: no folder may import one ` +
    'that imports it back, at any depth (see .dependency-cruiser.cjs and scripts/check-folders.mjs).',
);
process.exit(1);
