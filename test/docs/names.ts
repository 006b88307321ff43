import fs from 'node:fs';
import path from 'node:path';

/**
 * The check of a block marked `<!-- test: names-only (…) -->`: a shell block that runs this repository's
 * own tests or benchmarks (running it inside the suite would run them twice). Each of its commands must
 * be one this check understands, and everything it names must exist: the test files given to
 * `npx vitest run`, the npm scripts given to `npm run` (or `npm test` / `npm start`; `npm ci` as is) in package.json,
 * and each `--flag` after `--` in the source of the script's files (or the bench files they import).
 * Answers the problems found, empty when there are none.
 */
export function checkNames(code: string, root: string): string[] {
  const scripts: Record<string, string> = JSON.parse(
    fs.readFileSync(path.join(root, 'package.json'), 'utf8'),
  ).scripts;
  const problems: string[] = [];
  const commands = code
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter((line) => line !== '')
    .flatMap((line) => line.split(/\s*&&\s*/));
  if (commands.length === 0) problems.push('the block names nothing');
  for (const command of commands) {
    // Leading VAR=value assignments are the environment of the command.
    const words = command.split(/\s+/);
    while (words.length > 0 && /^\w+=/.test(words[0]!)) words.shift();
    const [tool, sub, ...rest] = words;
    if (tool === 'npx' && sub === 'vitest' && rest[0] === 'run') {
      const files = rest.slice(1).filter((w) => !w.startsWith('-'));
      if (files.length === 0) problems.push(`${command}: names no test file`);
      for (const file of files) {
        if (!/\.test\.ts$/.test(file) || !fs.existsSync(path.join(root, file))) {
          problems.push(`${command}: no test file ${file}`);
        }
      }
    } else if (tool === 'npm' && (sub === 'test' || sub === 'start' || sub === 'ci') && rest.length === 0) {
      if (sub !== 'ci' && !scripts[sub]) problems.push(`${command}: package.json has no "${sub}" script`);
    } else if (tool === 'npm' && sub === 'run' && rest[0]) {
      const script = scripts[rest[0]];
      if (!script) {
        problems.push(`${command}: package.json has no "${rest[0]}" script`);
        continue;
      }
      const dash = rest.indexOf('--');
      const flags = dash < 0 ? [] : rest.slice(dash + 1).filter((w) => w.startsWith('--'));
      const source = sourcesOf(script, root)
        .map((f) => fs.readFileSync(f, 'utf8'))
        .join('\n');
      for (const flag of flags) {
        const name = flag.replace(/^--/, '').replace(/=.*$/, '');
        if (!source.includes(`'${name}'`) && !source.includes(`'--${name}'`)) {
          problems.push(`${command}: ${flag} appears nowhere in the source of "${rest[0]}"`);
        }
      }
    } else {
      problems.push(
        `${command}: not a command this check understands (npx vitest run, npm run, npm test, npm start, npm ci)`,
      );
    }
  }
  return problems;
}

/** The .ts files an npm script runs (`tsx bench/x.ts`, `--import tsx bench/x.ts`) and their local imports. */
function sourcesOf(script: string, root: string): string[] {
  const files = new Set<string>();
  const add = (file: string) => {
    const full = path.join(root, file);
    if (files.has(full) || !fs.existsSync(full)) return;
    files.add(full);
    const text = fs.readFileSync(full, 'utf8');
    for (const m of text.matchAll(/(?:from |import\()'(\.\/[^']+)\.js'/g)) {
      add(path.join(path.dirname(file), `${m[1]}.ts`));
    }
  };
  for (const m of script.matchAll(/(\S+\.ts)\b/g)) add(m[1]!);
  return [...files];
}
