import type { Kysely } from 'kysely';

/**
 * Evaluators of the grader types (string_check, text_similarity, score_model, label_model) keep their
 * grader definition, in OpenAI's shape, as JSON.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('evaluators').addColumn('grader', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('evaluators').dropColumn('grader').execute();
}
