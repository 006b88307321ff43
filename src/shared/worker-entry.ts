import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker thread on the module `name` (without extension) beside the module at `from` (the
 * caller's `import.meta.url`). From the build that is the `.js` file; from the TypeScript sources
 * (tests, tsx) the `.ts` file, loaded through tsx (a dev dependency, present wherever the sources run).
 */
export function startWorker(from: string, name: string, options: WorkerOptions = {}): Worker {
  const fromSource = from.endsWith('.ts');
  const entry = new URL(`./${name}.${fromSource ? 'ts' : 'js'}`, from);
  if (!fromSource) return new Worker(entry, options);
  // import.meta.resolve is missing under some test runners; the bare name then resolves from the working directory.
  const tsx = typeof import.meta.resolve === 'function' ? import.meta.resolve('tsx/esm/api') : 'tsx/esm/api';
  const load = `import(${JSON.stringify(tsx)}).then((tsx) => tsx.tsImport(${JSON.stringify(entry.href)}, ${JSON.stringify(from)}))`;
  return new Worker(load, { ...options, eval: true });
}
