import fs from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from 'yaml';
import { type Experiment, ExperimentFile } from './experiment-schema.js';

/**
 * Reading `evalgate.yaml`: YAML (the `yaml` package, which keeps every node's offsets), checked against
 * the JSON Schema (experiment-schema.ts), then the rules a schema cannot say. Every problem names its
 * line and column, as `file:line:column: path: message`.
 */

export interface FileProblem {
  line: number;
  column: number;
  /** Where in the document, dotted: experiments.qa.gates.exact.min */
  path: string;
  message: string;
}

export class ExperimentFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: FileProblem[],
  ) {
    super(`${file}: ${problems.length} problem(s)`);
    this.name = 'ExperimentFileError';
  }

  /** One line per problem, `file:line:column: path: message`. */
  lines(): string[] {
    return this.problems.map(
      (p) => `${this.file}:${p.line}:${p.column}: ${p.path ? `${p.path}: ` : ''}${p.message}`,
    );
  }
}

export interface NamedExperiment {
  name: string;
  experiment: Experiment;
}

type Segment = string | number;
type YamlDocument = ReturnType<typeof parseDocument>;

let validator: ValidateFunction | null = null;
function validate(value: unknown): ErrorObject[] {
  validator ??= new Ajv({ allErrors: true, strict: false }).compile(ExperimentFile);
  return validator(value) ? [] : (validator.errors ?? []);
}

/** The node at `path` (or the deepest one that exists), and the key node of its last step when asked. */
function nodeAt(doc: YamlDocument, path: Segment[], key = false): Node | null {
  let node = doc.contents as Node | null;
  for (const [i, segment] of path.entries()) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) return node;
      if (key && i === path.length - 1 && isScalar(pair.key)) return pair.key as Node;
      node = (pair.value as Node | null) ?? (pair.key as Node);
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment] as Node | undefined;
      if (!item) return node;
      node = item;
    } else return node;
  }
  return node;
}

function pointerPath(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

class Problems {
  readonly list: FileProblem[] = [];
  constructor(
    private readonly doc: YamlDocument,
    private readonly counter: LineCounter,
  ) {}

  at(path: Segment[], message: string, key = false): void {
    const node = nodeAt(this.doc, path, key);
    const offset = node?.range?.[0] ?? 0;
    const { line, col } = this.counter.linePos(offset);
    this.list.push({ line, column: col, path: path.join('.'), message });
  }
}

function schemaMessage(e: ErrorObject): { path: Segment[]; message: string; key: boolean } {
  const path: Segment[] = pointerPath(e.instancePath);
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties') {
    const name = String(params.additionalProperty);
    const what = path.length === 1 && path[0] === 'experiments' ? 'experiment name' : 'field';
    return { path: [...path, name], message: `unknown ${what} '${name}'`, key: true };
  }
  if (e.keyword === 'required') {
    // At the key of the object that lacks it (the line people look for).
    return { path, message: `'${String(params.missingProperty)}' is missing`, key: path.length > 0 };
  }
  if (e.keyword === 'enum') {
    const allowed = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ');
    return { path, message: `must be one of ${allowed}`, key: false };
  }
  if (e.keyword === 'const') {
    return { path, message: `must be ${JSON.stringify(params.allowedValue)}`, key: false };
  }
  return { path, message: e.message ?? e.keyword, key: false };
}

/** The rules across fields, on an object the schema accepted. */
function crossChecks(file: ExperimentFile, problems: Problems): void {
  for (const [name, x] of Object.entries(file.experiments)) {
    const at = ['experiments', name];
    const generates = x.candidate.models !== undefined || x.candidate.prompts !== undefined;
    const kinds = [generates, x.candidate.command !== undefined].filter(Boolean);
    if (kinds.length !== 1) {
      problems.at([...at, 'candidate'], 'give models (and/or prompts), or command, not both');
    }
    if (x.candidate.parameters !== undefined && !generates) {
      problems.at([...at, 'candidate', 'parameters'], 'parameters go with models or prompts', true);
    }
    if (x.candidate.timeout_seconds !== undefined && x.candidate.command === undefined) {
      problems.at([...at, 'candidate', 'timeout_seconds'], 'timeout_seconds goes with command', true);
    }
    if (x.baseline?.run !== undefined && x.baseline.branch !== undefined) {
      problems.at([...at, 'baseline'], 'give one of run and branch, not both');
    }
    const range = x.dataset.range?.split(':').map(Number);
    if (range && range[0]! > range[1]!) {
      problems.at([...at, 'dataset', 'range'], 'start must not be greater than end');
    }
    for (const [evaluator, rules] of Object.entries(x.gates ?? {})) {
      if (!x.evaluators.includes(evaluator)) {
        problems.at(
          [...at, 'gates', evaluator],
          `gate on evaluator '${evaluator}', which is not among the experiment's evaluators (${x.evaluators.join(', ')})`,
          true,
        );
      }
      if (Object.keys(rules).filter((k) => k !== 'metric').length === 0) {
        problems.at([...at, 'gates', evaluator], 'a gate needs at least one rule', true);
      }
      if (rules.drop_at_confidence !== undefined && rules.metric === 'accuracy') {
        problems.at(
          [...at, 'gates', evaluator, 'drop_at_confidence'],
          'drop_at_confidence tests the score difference: it does not go with metric: accuracy',
          true,
        );
      }
    }
  }
}

/** Parses and checks an experiment file's text; throws ExperimentFileError with every problem found. */
export function parseExperiments(text: string, file: string): NamedExperiment[] {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new ExperimentFileError(
      file,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0] ?? counter.linePos(e.pos[0]);
        return { line: pos.line, column: pos.col, path: '', message: e.message.split('\n')[0]! };
      }),
    );
  }
  const value: unknown = doc.toJS();
  const problems = new Problems(doc, counter);
  const errors = validate(value);
  // A union or record reports the same spot more than once: one line per path and message.
  const seen = new Set<string>();
  for (const e of errors) {
    const m = schemaMessage(e);
    const id = `${m.path.join('.')}\u0000${m.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    problems.at(m.path, m.message, m.key);
  }
  if (problems.list.length === 0) crossChecks(value as ExperimentFile, problems);
  if (problems.list.length > 0) {
    problems.list.sort((a, b) => a.line - b.line || a.column - b.column);
    throw new ExperimentFileError(file, problems.list);
  }
  return Object.entries((value as ExperimentFile).experiments).map(([name, experiment]) => ({
    name,
    experiment,
  }));
}

export function readExperiments(file: string): NamedExperiment[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new ExperimentFileError(file, [{ line: 1, column: 1, path: '', message: reason }]);
  }
  return parseExperiments(text, file);
}
