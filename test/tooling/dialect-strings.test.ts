import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { DIALECTS } from '../../src/llm/dialects/registry.js';
import { WIRE_PROTOCOLS } from '../../src/shared/wire-protocol.js';

/*
 * A dialect's name and its route strings are decided in its own folder (src/llm/dialects/<name>/) and in
 * the registry only: everywhere else a property or method of the dialect object says what the comparison
 * would. This scan reads every file of src/ with the TypeScript compiler and fails on a comparison
 * (`===`, `!==`, `==`, `!=`, a `case`, `startsWith`/`endsWith`/`includes`) against a dialect's name or a
 * route path, or a SQL comparison (`= 'name'`) inside a template literal, outside that dialect.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = path.join(ROOT, 'src');

/** The files that decide every dialect's strings. */
const REGISTRY = ['src/llm/dialects/registry.ts', 'src/llm/dialects/types.ts'];

/**
 * Comparisons with the same spelling that are not about a dialect, each with its reason. Keep it short:
 * anything else compared against a dialect's string is a dialect decided in the wrong place.
 */
const UNRELATED: readonly { file: string; text: string; why: string }[] = [
  {
    file: 'src/openai-evals/eval-runs-sources.ts',
    text: 'responses',
    why: "an OpenAI Evals data source's type (completions or responses), a contract value of that API",
  },
];

/** Migrations are history: their SQL stays as it was written. */
const FROZEN = /^src\/db\/migrations\//;

interface Violation {
  file: string;
  line: number;
  text: string;
  /** The dialect whose string it is. */
  dialect: string;
}

/** Every string of each dialect: its name and its routes' paths. */
function dialectStrings(): Map<string, string> {
  const owner = new Map<string, string>();
  for (const name of WIRE_PROTOCOLS) owner.set(name, name);
  for (const dialect of Object.values(DIALECTS)) {
    owner.set(dialect.routes.call, dialect.name);
    owner.set(dialect.routes.prefix, dialect.name);
    for (const path of (dialect.routes as { also?: readonly string[] }).also ?? [])
      owner.set(path, dialect.name);
  }
  return owner;
}

const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);
const STRING_TESTS = new Set(['startsWith', 'endsWith', 'includes']);

function literalText(node: ts.Node | undefined): string | null {
  if (node === undefined) return null;
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isParenthesizedExpression(node)) return literalText(node.expression);
  return null;
}

/** A file's comparisons against dialect strings (`file` relative to the repository, with forward slashes). */
function scanFile(file: string, text: string, owner: ReadonlyMap<string, string>): Violation[] {
  if (FROZEN.test(file) || REGISTRY.includes(file)) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Violation[] = [];
  const report = (node: ts.Node, compared: string) => {
    const dialect = owner.get(compared);
    if (dialect === undefined) return;
    if (file.startsWith(`src/llm/dialects/${dialect}/`)) return;
    if (UNRELATED.some((u) => u.file === file && u.text === compared)) return;
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push({ file, line: line + 1, text: compared, dialect });
  };
  const sqlCompared = /=\s*'([^']+)'/g;
  const visit = (node: ts.Node): void => {
    if (ts.isBinaryExpression(node) && EQUALITY.has(node.operatorToken.kind)) {
      for (const side of [node.left, node.right]) {
        const compared = literalText(side);
        if (compared !== null) report(side, compared);
      }
    } else if (ts.isCaseClause(node)) {
      const compared = literalText(node.expression);
      if (compared !== null) report(node.expression, compared);
    } else if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      STRING_TESTS.has(node.expression.name.text)
    ) {
      const compared = literalText(node.arguments[0]);
      if (compared !== null) {
        report(node, compared);
        // A search for a member of recorded JSON (`"route":"embeddings"`) decides the route too.
        const member = /^"route":"([^"]*)"$/.exec(compared);
        if (member) report(node, member[1]!);
      }
    } else if (ts.isTemplateExpression(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      const parts = ts.isTemplateExpression(node)
        ? [node.head.text, ...node.templateSpans.map((s) => s.literal.text)]
        : [node.text];
      for (const part of parts) for (const m of part.matchAll(sqlCompared)) report(node, m[1]!);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

describe('dialect strings', () => {
  const owner = dialectStrings();

  it('knows every dialect by name and by route', () => {
    expect(owner.get('messages')).toBe('messages');
    expect(owner.get('/v1/chat/completions')).toBe('chat');
    expect(owner.get('/v1/responses')).toBe('responses');
    expect(owner.get('/v1/embeddings')).toBe('embeddings');
  });

  it('compares no dialect name or route string outside its dialect', () => {
    const violations = sourceFiles(SRC).flatMap((full) =>
      scanFile(path.relative(ROOT, full).split(path.sep).join('/'), fs.readFileSync(full, 'utf8'), owner),
    );
    expect(violations).toEqual([]);
  });

  describe('catches', () => {
    const scan = (file: string, text: string) => scanFile(file, text, owner).map((v) => [v.text, v.line]);

    it('an equality against a dialect name, either side, in any spelling of equality', () => {
      const text = [
        "export const a = (route: string) => route === 'embeddings';",
        "export const b = (route: string) => 'responses' !== route;",
        'export const c = (route: string) => route == `chat`;',
        "export const d = (m: { route?: string }) => (m.route != ('messages'));",
      ].join('\n');
      expect(scan('src/traces/x.ts', text)).toEqual([
        ['embeddings', 1],
        ['responses', 2],
        ['chat', 3],
        ['messages', 4],
      ]);
    });

    it('a case, a route path, a search in recorded JSON and a SQL comparison', () => {
      const text = [
        'export function f(route: string, url: string, metadata: string) {',
        '  switch (route) {',
        "    case 'messages':",
        '      return 1;',
        '  }',
        "  if (url.startsWith('/v1/responses')) return 2;",
        `  if (metadata.includes('"route":"embeddings"')) return 3;`,
        "  return `select 1 where (metadata ->> 'route') = 'chat'`;",
        '}',
      ].join('\n');
      expect(scan('src/capture/x.ts', text)).toEqual([
        ['messages', 3],
        ['/v1/responses', 6],
        ['embeddings', 7],
        ['chat', 8],
      ]);
    });

    it("nothing inside the dialect's own folder or the registry, but another dialect's name there", () => {
      const text = "export const own = (r: string) => r === 'messages' || r === 'chat';";
      expect(scan('src/llm/dialects/messages/x.ts', text)).toEqual([['chat', 1]]);
      expect(scan('src/llm/dialects/registry.ts', text)).toEqual([]);
    });

    it('neither an assignment, an argument, nor an unrelated string', () => {
      const text = [
        "export const route = 'chat';",
        "export const call = (f: (r: string) => void) => f('responses');",
        "export const other = (x: string) => x === 'assistant';",
      ].join('\n');
      expect(scan('src/gateway/x.ts', text)).toEqual([]);
    });
  });
});
