import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type Static, Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { ApiError } from '../../shared/errors.js';
import { packagePath } from '../../shared/package-root.js';
import { Scale } from '../../shared/scale.js';

/**
 * The judge catalog: built-in, versioned judge prompts users start from (data/judge-templates/, one JSON
 * file per `name@version`, shipped with the package). A template is data, never code: adding one is
 * adding a file. A version, once published, never changes; a revised prompt is a new version.
 */
export const JudgeTemplate = Type.Object(
  {
    object: Type.Literal('evaluator_template'),
    id: Type.String({ description: '`name@version`, as `template` takes it' }),
    name: Type.String({ pattern: '^[a-z][a-z0-9_]*$' }),
    version: Type.Integer({ minimum: 1 }),
    title: Type.String(),
    description: Type.String(),
    scale: Scale,
    pass_threshold: Type.Union([Type.Number(), Type.Null()]),
    variables: Type.Array(Type.String(), {
      description: 'The prompt variables ({{input}}, {{metadata.context}}, …)',
    }),
    prompt: Type.String(),
  },
  { additionalProperties: false },
);
export type JudgeTemplate = Static<typeof JudgeTemplate>;

const DIR = packagePath('data', 'judge-templates');

let loaded: JudgeTemplate[] | null = null;

/** Reads the catalog once; a malformed file is a packaging error, reported by name. */
function load(): JudgeTemplate[] {
  if (loaded) return loaded;
  // Compiled here, on the first read, rather than when the module loads (every start).
  const check = Compile(Type.Omit(JudgeTemplate, ['object', 'id']));
  const templates: JudgeTemplate[] = [];
  for (const file of readdirSync(DIR).filter((f) => f.endsWith('.json'))) {
    const data: unknown = JSON.parse(readFileSync(path.join(DIR, file), 'utf8'));
    if (!check.Check(data)) throw new Error(`data/judge-templates/${file} is not a valid judge template`);
    const id = `${data.name}@${data.version}`;
    if (file !== `${id}.json`) throw new Error(`data/judge-templates/${file} must be named ${id}.json`);
    templates.push({ object: 'evaluator_template', id, ...data });
  }
  templates.sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version);
  loaded = templates;
  return templates;
}

/** Every template, every version, by name then version. */
export function listTemplates(): JudgeTemplate[] {
  return load();
}

/** A template by `name@version`, or by `name` alone (its latest version); 422 at `loc` when unknown. */
export function findTemplate(ref: string): JudgeTemplate | null {
  const [name, version] = ref.split('@');
  const same = load().filter((t) => t.name === name);
  if (version === undefined) return same.at(-1) ?? null;
  return same.find((t) => String(t.version) === version) ?? null;
}

export function requireTemplate(ref: string, loc: (string | number)[]): JudgeTemplate {
  const found = findTemplate(ref);
  if (!found) {
    const known = load()
      .map((t) => t.id)
      .join(', ');
    throw ApiError.invalid(loc, `Unknown evaluator template '${ref}'; known: ${known}`, 'template_not_found');
  }
  return found;
}
