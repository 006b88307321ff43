import type { Kysely } from 'kysely';

/**
 * Execution state that any number of processes share: a run's layout and counters, its launches (with
 * call ids that survive restarts), its chunks of work (with leases), and the live workers.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const counters = [
    'done_positions',
    'total_positions',
    'judge_calls',
    'judge_prompt_tokens',
    'judge_completion_tokens',
    'judge_unpriced_calls',
    'generation_calls',
    'generation_prompt_tokens',
    'generation_completion_tokens',
    'generation_unpriced_calls',
  ];
  for (const column of counters) {
    await db.schema
      .alterTable('runs')
      .addColumn(column, 'bigint', (c) => c.notNull().defaultTo(0))
      .execute();
  }
  for (const column of ['judge_cost', 'generation_cost']) {
    await db.schema
      .alterTable('runs')
      .addColumn(column, 'double precision', (c) => c.notNull().defaultTo(0))
      .execute();
  }
  // JSON: positions, expected positions and side offsets, fixed when the run is prepared.
  await db.schema.alterTable('runs').addColumn('layout', 'text').execute();
  // Set when waiting on rate limits ran past its bound: the rest of the run is recorded as errors.
  await db.schema.alterTable('runs').addColumn('abandoned', 'text').execute();
  await db.schema.alterTable('runs').addColumn('progress_at', 'double precision').execute();

  await db.schema
    .createTable('run_launches')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('launch_index', 'integer', (c) => c.notNull())
    .addColumn('model', 'text')
    .addColumn('call_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_launches_pk', ['run_id', 'launch_index'])
    .execute();

  await db.schema
    .createTable('run_chunks')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('launch_index', 'integer', (c) => c.notNull())
    .addColumn('chunk_index', 'integer', (c) => c.notNull())
    .addColumn('from_position', 'integer', (c) => c.notNull())
    .addColumn('to_position', 'integer', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    // pending | done
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('owner', 'text')
    // Unix milliseconds; a pending chunk whose lease expired may be taken by any worker.
    .addColumn('lease_expires_at', 'double precision')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_chunks_pk', ['run_id', 'launch_index', 'chunk_index'])
    .execute();
  await db.schema
    .createIndex('run_chunks_claimable')
    .on('run_chunks')
    .columns(['status', 'environment', 'lease_expires_at'])
    .execute();

  await db.schema
    .createTable('workers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('environments', 'text', (c) => c.notNull())
    .addColumn('executor', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('concurrency', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('heartbeat_at', 'double precision', (c) => c.notNull())
    .execute();
}
