/**
 * Migration 033: reviewers stored as `user:<key id>` (a key made through the API reviewed as the key that
 * made it) become `key:<id>` of the key that wrote them where that key is known; other reviewer ids stay.
 */
import { type Kysely, Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';

const NOW = '2026-01-02T03:04:05.000Z';
let fresh: FreshDatabase;
let handle: Awaited<ReturnType<typeof openDatabase>>;

async function insert(db: Kysely<any>, table: string, row: Record<string, unknown>) {
  const cols = Object.keys(row);
  await sql`insert into ${sql.table(table)} (${sql.join(cols.map((c) => sql.ref(c)))})
    values (${sql.join(cols.map((c) => row[c]))})`.execute(db);
}

/** Who wrote each row: the old ids, as the code before 033 stored them. */
const OLD = ['user:key_maker', 'user:key_admin', 'user:usr_person', 'key:key_cli'];

beforeAll(async () => {
  fresh = await freshDatabase();
  handle = await openDatabase(fresh.url);
  const { db } = handle;
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error } = await migrator.migrateTo('032_session_end');
  if (error) throw error;
  await insert(db, 'organizations', { id: 'org_1', name: 'default', created_at: NOW });
  await insert(db, 'projects', { id: 'prj_1', organization_id: 'org_1', name: 'main', created_at: NOW });
  const key = (id: string, createdBy: string | null) =>
    insert(db, 'api_keys', {
      id,
      project_id: 'prj_1',
      name: id,
      prefix: id,
      hash: `hash-${id}`,
      permissions: '["*"]',
      created_by: createdBy,
      created_at: NOW,
    });
  // key_maker made one key (its reviews are that key's); key_admin made two (which one wrote is unknown).
  await key('key_maker', null);
  await key('key_one', 'key_maker');
  await key('key_admin', null);
  await key('key_a', 'key_admin');
  await key('key_b', 'key_admin');
  await insert(db, 'annotation_queues', {
    id: 'aq_1',
    project_id: 'prj_1',
    name: 'q',
    description: null,
    evaluators: '[]',
    comment: 0,
    reviewers_per_item: 4,
    claim_seconds: 60,
    created_at: NOW,
    updated_at: NOW,
  });
  await insert(db, 'annotation_items', {
    id: 'aqi_1',
    queue_id: 'aq_1',
    kind: 'task_log',
    ref: 'log_1',
    source: 'api',
    state: 'open',
    needed: 4,
    taken: 4,
    reviews: 4,
    created_at: NOW,
    updated_at: NOW,
  });
  for (const [i, reviewer] of OLD.entries()) {
    await insert(db, 'annotation_reviews', {
      id: `rev_${i}`,
      project_id: 'prj_1',
      queue_id: 'aq_1',
      item_id: 'aqi_1',
      evaluator_id: 'evl_1',
      reviewer,
      score: 3,
      created_at: NOW,
    });
    await insert(db, 'annotation_assignments', {
      item_id: 'aqi_1',
      reviewer,
      queue_id: 'aq_1',
      state: 'reviewed',
      updated_at: NOW,
    });
  }
  const latest = await migrator.migrateToLatest();
  if (latest.error) throw latest.error;
});
afterAll(async () => {
  await handle?.close();
  await fresh?.drop();
});

describe('migration 033', () => {
  it("moves a made key's reviews to that key and leaves the rest readable as they were", async () => {
    const expected = ['key:key_one', 'user:key_admin', 'user:usr_person', 'key:key_cli'];
    const reviews = await handle.db
      .selectFrom('annotation_reviews')
      .select(['id', 'reviewer'])
      .orderBy('id')
      .execute();
    expect(reviews.map((r) => r.reviewer)).toEqual(expected);
    const held = await handle.db.selectFrom('annotation_assignments').select('reviewer').execute();
    expect(held.map((r) => r.reviewer).sort()).toEqual([...expected].sort());
  });
});
