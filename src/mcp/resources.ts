import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { packagePath } from '../shared/package-root.js';

/** The documentation folder of the installation (beside `src/` and `dist/`). */
const DOCS = packagePath('docs');

interface DocPage {
  name: string;
  title: string;
  file: string;
}

let pages: DocPage[] | null = null;

/** The docs pages (`docs/<name>.md`), read once; none when the folder is not installed. */
export function docPages(dir = DOCS): DocPage[] {
  if (pages && dir === DOCS) return pages;
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.md'));
  } catch {
    files = [];
  }
  const found = files.sort().map((f) => {
    const file = path.join(dir, f);
    const heading = /^#\s+(.+)$/m.exec(readFileSync(file, 'utf8'));
    const name = f.slice(0, -'.md'.length);
    return { name, title: heading?.[1]?.trim() ?? name, file };
  });
  if (dir === DOCS) pages = found;
  return found;
}

/** Each docs page as the resource `evalgate://docs/<name>` (Markdown). */
export function registerDocs(server: McpServer): void {
  for (const page of docPages()) {
    const uri = `evalgate://docs/${page.name}`;
    server.registerResource(
      `docs-${page.name}`,
      uri,
      { title: page.title, description: `Evalgate documentation: ${page.title}`, mimeType: 'text/markdown' },
      async () => ({
        contents: [{ uri, mimeType: 'text/markdown', text: await readFile(page.file, 'utf8') }],
      }),
    );
  }
}
