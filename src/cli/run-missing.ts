import type { Evalgate, Run } from '../client/index.js';
import { resultRows } from './run-results.js';

/** At most this many missing samples are read to say why positions are missing. */
const READ = 100;

/**
 * Why a run's missing positions were not scored, one line per reason ("2 missing: the sample has no
 * output"), read from its missing samples; empty when nothing is missing.
 */
export async function missingLines(client: Evalgate, run: Run): Promise<string[]> {
  const missing = resultRows(run).reduce((n, r) => n + r.missing, 0);
  if (missing === 0) return [];
  const page = await client.runs.samples(run.id, { status: 'missing', limit: READ });
  const counts = new Map<string, number>();
  for (const s of page.data) {
    const reason = s.missing_reason ?? 'no reason recorded';
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  const lines = [...counts].map(([reason, n]) => `${n} missing: ${reason}`);
  if (page.data.length < missing) lines.push(`(reasons of the first ${page.data.length} of ${missing})`);
  lines.push(`see: evalgate runs samples ${run.id} --missing`);
  return lines;
}
