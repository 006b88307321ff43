import type { Kysely } from 'kysely';
import { readItemRows } from '../catalog/datasets/repository.js';
import { createDataset, type DatasetContext } from '../catalog/datasets/service.js';
import type { Database } from '../db/schema.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { RunContext } from '../runs/context.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { isObject, type JsonObject, parseJson } from '../shared/json.js';
import { storedCompletionsSource } from '../sources/stored-completions.js';
import { storedResponsesSource } from '../sources/stored-responses.js';
import type { SourceKind } from '../sources/types.js';
import { badRequest } from './errors.js';
import { itemChecker } from './evals-validation.js';
import { requireFile } from './files-service.js';
import { type StoredCompletionFilter, selectStoredCompletions } from './stored-completions-repository.js';
import { selectResponseRows } from './stored-responses-source.js';

/**
 * The rows of an eval run, as the dataset the run reads: a file as it is (checked against the eval's
 * item schema), inline rows stored as a dataset, and stored completions or responses selected when the
 * run is created.
 */

/** What eval runs need: the run rules (queue, environments), uploads for inline rows, model resolution. */
export interface EvalRunPorts {
  runs: RunContext;
  uploads: DatasetContext;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  /** Waits for the task-log writer's pending batch, so calls answered a moment ago are selectable. */
  flushLogs(): Promise<void>;
}

const SOURCE = ['body', 'data_source', 'source'];
/** Problems named at most, and per row. */
const MAX_ISSUES = 10;
const PER_ROW = 2;
const PAGE = 500;

/** Inline rows checked against the eval's item schema: 400 naming the first problems. */
function checkItems(schema: unknown, rows: JsonObject[]): void {
  if (!isObject(schema)) return;
  const check = itemChecker(schema);
  const issues: ValidationIssue[] = [];
  rows.forEach((row, i) => {
    if (issues.length >= MAX_ISSUES) return;
    for (const msg of check(row.item).slice(0, PER_ROW)) {
      issues.push({
        loc: [...SOURCE, 'content', i, 'item'],
        msg: `does not match the eval's item_schema: ${msg}`,
        type: 'item_schema',
      });
    }
  });
  if (issues.length) throw badRequest(issues.slice(0, MAX_ISSUES));
}

/**
 * A file's rows checked against the eval's item schema, read a page at a time (any size in bounded
 * memory), stopping at the first problems: 400 naming each row by its line (1-based, as `files.content`
 * answers it).
 */
async function checkFileItems(db: Kysely<Database>, schema: unknown, fileId: string): Promise<void> {
  if (!isObject(schema)) return;
  const check = itemChecker(schema);
  const issues: ValidationIssue[] = [];
  for (let from = 0; issues.length < MAX_ISSUES; from += PAGE) {
    const rows = await readItemRows(db, fileId, from, from + PAGE);
    for (const row of rows) {
      const data = parseJson<unknown>(row.data, null);
      for (const msg of check(isObject(data) ? data.item : undefined).slice(0, PER_ROW)) {
        issues.push({
          loc: [...SOURCE, 'id'],
          msg: `line ${row.position + 1}: item does not match the eval's item_schema: ${msg}`,
          type: 'item_schema',
        });
      }
      if (issues.length >= MAX_ISSUES) break;
    }
    if (rows.length < PAGE) break;
  }
  if (issues.length) throw badRequest(issues.slice(0, MAX_ISSUES));
}

/**
 * Stored completions selected by the source's filters (and the eval's config metadata) as eval rows:
 * `item` the request (`input` messages, `metadata`, `model`), `sample` the stored answer. The selection
 * is taken when the run is created.
 */
async function storedRows(
  db: Kysely<Database>,
  projectId: string,
  source: JsonObject,
  evalFilter: Record<string, string>,
): Promise<JsonObject[]> {
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const filter: StoredCompletionFilter & { limit?: number } = {
    metadata: { ...evalFilter, ...((source.metadata as Record<string, string> | null) ?? {}) },
  };
  if (typeof source.model === 'string') filter.model = source.model;
  const after = num(source.created_after);
  const before = num(source.created_before);
  const limit = num(source.limit);
  if (after !== undefined) filter.createdAfter = after;
  if (before !== undefined) filter.createdBefore = before;
  if (limit !== undefined) filter.limit = limit;
  const found = await selectStoredCompletions(db, projectId, filter);
  return found.map((c) => ({
    item: { id: c.id, input: c.input, metadata: c.metadata, model: c.model },
    sample: {
      id: c.id,
      object: 'chat.completion',
      model: c.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: c.output.content,
            ...(c.output.tool_calls ? { tool_calls: c.output.tool_calls } : {}),
          },
          finish_reason: c.output.finish_reason,
        },
      ],
      usage: c.usage,
    },
  }));
}

/** How each kind of selected rows is chosen when the run is created, by the kind's name. */
const SELECT: Record<
  string,
  (
    db: Kysely<Database>,
    projectId: string,
    source: JsonObject,
    filter: Record<string, string>,
  ) => Promise<JsonObject[]>
> = {
  [storedCompletionsSource.type]: storedRows,
  [storedResponsesSource.type]: selectResponseRows,
};

/** The id of the dataset the run reads (400 for a file the project has not, or rows off the schema). */
export async function rowsOf(
  ports: EvalRunPorts,
  projectId: string,
  kind: SourceKind,
  source: JsonObject,
  runId: string,
  config: JsonObject,
): Promise<string> {
  const { db } = ports.runs;
  if (kind.eval?.rows === 'file') {
    const file = await requireFile(db, projectId, String(source.id)).catch((err: unknown) => {
      if (err instanceof ApiError && err.code === 'not_found') {
        throw badRequest([{ loc: [...SOURCE, 'id'], msg: `No file '${source.id}'`, type: 'not_found' }]);
      }
      throw err;
    });
    await checkFileItems(db, config.item_schema, file.id);
    return file.id;
  }
  const evalFilter =
    config.type === 'custom' ? {} : ((config.metadata as Record<string, string> | undefined) ?? {});
  let rows: JsonObject[];
  const select = SELECT[kind.type];
  if (kind.eval?.rows === 'selected' && select) {
    // Calls answered a moment ago are selected too: the task-log writer's pending batch goes first.
    await ports.flushLogs();
    rows = await select(db, projectId, source, evalFilter);
  } else {
    rows = source.content as JsonObject[];
    checkItems(config.item_schema, rows);
  }
  return (await createDataset(ports.uploads, projectId, { label: `eval-run:${runId}`, items: rows })).id;
}
