/**
 * The source of a module loader hook (for `module.register`) that appends every URL the loader resolves to
 * the file named by its `data.log`: how a test sees which modules a child process loaded.
 */
export const RESOLVE_LOG_HOOK = [
  "import fs from 'node:fs';",
  'let log;',
  'export function initialize(data) { log = data.log; }',
  'export async function resolve(specifier, context, next) {',
  '  const result = await next(specifier, context);',
  "  fs.appendFileSync(log, result.url + '\\n');",
  '  return result;',
  '}',
].join('\n');
