import { Readable, Transform } from 'node:stream';
import type { Kysely } from 'kysely';
import { type DatasetContext, deleteDataset, uploadDataset } from '../catalog/datasets/service.js';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { badRequest } from './errors.js';

/** Purposes Evalgate stores files for: JSON-lines datasets that eval runs read. */
export const FILE_PURPOSES = ['evals'] as const;

export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: 'processed';
  expires_at: null;
  status_details: null;
}

interface FileRow {
  id: string;
  created_at: string;
  filename?: string | null | undefined;
  purpose?: string | null | undefined;
  bytes?: number | string | null | undefined;
}

function toFile(row: FileRow): FileObject {
  return {
    id: row.id,
    object: 'file',
    bytes: Number(row.bytes ?? 0),
    created_at: Math.floor(Date.parse(row.created_at) / 1000),
    filename: row.filename ?? '',
    purpose: row.purpose ?? '',
    status: 'processed',
    expires_at: null,
    status_details: null,
  };
}

/** OpenAI's 400 for what the datasets service reports as a 422. */
async function asOpenAi<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'validation_error') throw badRequest(err.issues);
    throw err;
  }
}

/** Counts the bytes that pass, as uploaded. */
class ByteCounter extends Transform {
  bytes = 0;
  override _transform(
    chunk: Buffer,
    _enc: BufferEncoding,
    done: (err?: Error | null, data?: Buffer) => void,
  ) {
    this.bytes += chunk.length;
    done(null, chunk);
  }
}

/** Stores an uploaded JSON-lines file as a dataset with a purpose (streamed, as dataset uploads are). */
export async function storeFile(
  ctx: DatasetContext,
  projectId: string,
  filename: string,
  stream: Readable,
): Promise<{ id: string; bytes: number }> {
  const counter = new ByteCounter();
  // A body cut short fails the file's stream, sometimes after the upload has stopped reading the counter:
  // the error then reaches the route through the file stream, and must not be left unhandled here.
  counter.on('error', () => {});
  stream.on('error', (err) => counter.destroy(err));
  const label = `file:${Date.now().toString(36)}:${Math.random().toString(36).slice(2, 10)}`;
  const dataset = await asOpenAi(() => uploadDataset(ctx, projectId, { label }, stream.pipe(counter)));
  await ctx.db
    .updateTable('datasets')
    .set({ filename: filename.slice(0, 1000), bytes: counter.bytes })
    .where('id', '=', dataset.id)
    .execute();
  return { id: dataset.id, bytes: counter.bytes };
}

/** Gives a stored upload its purpose, or removes it when the purpose is wrong. */
export async function finishFile(
  db: Kysely<Database>,
  projectId: string,
  stored: { id: string } | null,
  purpose: string | undefined,
): Promise<FileObject> {
  const issues = [];
  if (!stored)
    issues.push({ loc: ['body', 'file'], msg: 'Field required: a JSON-lines file', type: 'missing' });
  if (purpose === undefined)
    issues.push({ loc: ['body', 'purpose'], msg: 'Field required', type: 'missing' });
  else if (!(FILE_PURPOSES as readonly string[]).includes(purpose)) {
    issues.push({
      loc: ['body', 'purpose'],
      msg: `Evalgate stores files for ${FILE_PURPOSES.join(', ')} only, not '${purpose}'`,
      type: 'enum',
    });
  }
  if (issues.length || !stored) {
    if (stored) await deleteDataset(db, projectId, stored.id);
    throw badRequest(issues);
  }
  await db.updateTable('datasets').set({ purpose }).where('id', '=', stored.id).execute();
  return requireFile(db, projectId, stored.id);
}

function files(db: Kysely<Database>, projectId: string) {
  return db
    .selectFrom('datasets')
    .select(['id', 'created_at', 'filename', 'purpose', 'bytes'])
    .where('project_id', '=', projectId)
    .where('purpose', 'is not', null);
}

export async function requireFile(db: Kysely<Database>, projectId: string, id: string): Promise<FileObject> {
  const row = await files(db, projectId).where('id', '=', id).executeTakeFirst();
  if (!row) throw ApiError.notFound('File', id);
  return toFile(row);
}

export interface ListFilesQuery {
  after?: string;
  limit?: number;
  order?: 'asc' | 'desc';
  purpose?: string;
}

/** Cursor pagination as OpenAI's: `after` an id, newest first by default. Ids sort by creation. */
export async function listFiles(db: Kysely<Database>, projectId: string, query: ListFilesQuery) {
  const limit = query.limit ?? 20;
  const order = query.order ?? 'desc';
  let q = files(db, projectId);
  if (query.purpose !== undefined) q = q.where('purpose', '=', query.purpose);
  if (query.after !== undefined) q = q.where('id', order === 'desc' ? '<' : '>', query.after);
  const rows = await q
    .orderBy('id', order)
    .limit(limit + 1)
    .execute();
  const data = rows.slice(0, limit).map(toFile);
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: rows.length > limit,
  };
}

/** The file's rows as JSON lines, read a page at a time: any size streams in bounded memory. */
export function fileContent(db: Kysely<Database>, id: string): Readable {
  const PAGE = 1000;
  let next = 0;
  return new Readable({
    async read() {
      try {
        const rows = await db
          .selectFrom('dataset_items')
          .select(['position', 'data'])
          .where('dataset_id', '=', id)
          .where('position', '>=', next)
          .orderBy('position')
          .limit(PAGE)
          .execute();
        if (rows.length === 0) {
          this.push(null);
          return;
        }
        next = Number(rows.at(-1)?.position) + 1;
        this.push(`${rows.map((r) => r.data).join('\n')}\n`);
      } catch (err) {
        this.destroy(err as Error);
      }
    },
  });
}

export async function deleteFile(db: Kysely<Database>, projectId: string, id: string) {
  await requireFile(db, projectId, id);
  await deleteDataset(db, projectId, id);
  return { id, object: 'file' as const, deleted: true as const };
}
