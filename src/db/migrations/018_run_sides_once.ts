import { type Kysely, sql } from 'kysely';

/**
 * One birth of a run: a run's sides are stored once, in its plan (the API's `sample`, `ground_truth` and
 * `baseline` views are derived from the plan's sides when read), so the three side columns go. Eval runs
 * keep their name on the run itself; runs made before carry it over from their eval-run link.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`update runs set name = (select e.name from eval_runs e where e.run_id = runs.id)
    where name is null and id in (select run_id from eval_runs)`.execute(db);
  // One column per statement: SQLite drops one at a time.
  for (const column of ['sample', 'ground_truth', 'baseline']) {
    await db.schema.alterTable('runs').dropColumn(column).execute();
  }
}
