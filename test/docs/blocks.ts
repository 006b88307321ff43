import fs from 'node:fs';
import path from 'node:path';

/**
 * The code blocks of the README and docs/*.md that a test runs: fenced blocks tagged sh, bash, shell,
 * console, python, js or ts. A block is run unless the line before its fence says why not:
 *
 *   <!-- test: skip (the reason) -->
 *
 * A skip without a reason is refused, so that every illustrative block says why it is one. A shell block
 * that runs this repository's own tests or benchmarks is checked, not run, under
 *
 *   <!-- test: names-only (the reason) -->
 *
 * the test files, npm scripts and flags it names must exist (test/docs/names.ts). A TS block of code
 * that lives inside src/ (its imports relative to src/) is type-checked against the sources under
 *
 *   <!-- test: typecheck (the reason) -->
 */

export type Lang = 'sh' | 'python' | 'js' | 'ts';

export interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: Lang;
  code: string;
  /** Why the block is not run, or null. */
  skip: string | null;
  /** Why only the names of a block are checked (test/docs/names.ts), or null. */
  namesOnly: string | null;
  /** Why a block is type-checked as code inside src/ rather than run, or null. */
  typecheck: string | null;
}

const LANGS: Record<string, Lang> = {
  sh: 'sh',
  bash: 'sh',
  shell: 'sh',
  console: 'sh',
  python: 'python',
  py: 'python',
  js: 'js',
  javascript: 'js',
  mjs: 'js',
  ts: 'ts',
  typescript: 'ts',
};

const MARKER = /^<!--\s*test:\s*(skip|names-only|typecheck)\s*(?:\((.*)\))?\s*-->$/;

export function codeBlocks(file: string, root: string): Block[] {
  const lines = fs.readFileSync(path.join(root, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    let end = i + 1;
    while (end < lines.length && lines[end]!.trimEnd() !== fence) end++;
    const lang = LANGS[open[2]!.toLowerCase()];
    if (lang) {
      const marker = MARKER.exec((lines[i - 1] ?? '').trim());
      const kind = marker?.[1];
      const reason = marker?.[2]?.trim() ?? '';
      if (marker && !reason) throw new Error(`${file}:${i}: a ${kind} block must say why`);
      if (kind === 'names-only' && lang !== 'sh')
        throw new Error(`${file}:${i}: only shell blocks can be names-only`);
      if (kind === 'typecheck' && lang !== 'ts')
        throw new Error(`${file}:${i}: only TS blocks can be type-checked`);
      blocks.push({
        file,
        line: i + 1,
        lang,
        code: lines.slice(i + 1, end).join('\n'),
        skip: kind === 'skip' ? reason : null,
        namesOnly: kind === 'names-only' ? reason : null,
        typecheck: kind === 'typecheck' ? reason : null,
      });
    }
    i = end;
  }
  return blocks;
}

/** README.md and every docs/*.md, relative to the root. */
export function documents(root: string): string[] {
  const docs = fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}
