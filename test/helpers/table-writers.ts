import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Patterns of a statement that writes `table`: Kysely's builders, raw SQL in any quoting or case, and the
 * bulk helpers that take a table's name (insertRows, pruneTable).
 */
export function writesOf(table: string): RegExp[] {
  return [
    new RegExp(
      `\\b(updateTable|insertInto|deleteFrom|replaceInto|mergeInto)\\(\\s*['"\`]${table}['"\`]\\s*\\)`,
    ),
    new RegExp(`\\b(update|insert\\s+into|delete\\s+from)\\s+"?${table}"?(?![\\w"])`, 'i'),
    new RegExp(`\\b(insertRows|pruneTable)\\(\\s*\\w+\\s*,\\s*['"\`]${table}['"\`]`),
  ];
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The files of src/ (migrations aside: they create the tables) whose code writes `table`, sorted. */
export function writersOf(table: string): string[] {
  const patterns = writesOf(table);
  return sourceFiles(path.join(ROOT, 'src'))
    .map((file) => path.relative(ROOT, file).split(path.sep).join('/'))
    .filter((file) => !file.startsWith('src/db/migrations/'))
    .filter((file) => {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      return patterns.some((pattern) => pattern.test(text));
    })
    .sort();
}
