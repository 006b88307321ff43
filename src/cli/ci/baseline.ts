import type { Evalgate, Run } from '../../client/index.js';
import type { CiContext } from './ci-env.js';
import type { NamedExperiment } from './experiment-file.js';
import { META } from './launch.js';

/**
 * The run a candidate is compared with: a named run, or the latest completed run of the same experiment
 * recorded on a branch (the experiment's `baseline.branch`, else the pull request's target branch). Runs
 * are listed by name (the experiment's) and told apart by the metadata `evalgate ci` writes.
 */

export interface BaselineChoice {
  run: Run | null;
  /** How it was chosen, or why there is none: shown in the report. */
  note: string;
}

/** How many runs of the experiment are looked through for one on the branch. */
const SEARCH_LIMIT = 1000;

export async function findBaseline(
  client: Evalgate,
  x: NamedExperiment,
  ctx: CiContext,
  candidateId: string,
): Promise<BaselineChoice> {
  const wanted = x.experiment.baseline;
  if (wanted?.run !== undefined) {
    const run = await client.runs.get(wanted.run);
    return { run, note: `run ${run.id} (named in the experiment file)` };
  }
  const branch = wanted?.branch ?? ctx.targetBranch;
  if (!branch) {
    return {
      run: null,
      note: 'no baseline: the experiment names none and no target branch is known (baseline.branch sets one)',
    };
  }
  let seen = 0;
  for await (const run of client.runs.list({ name: x.name, status: 'completed', limit: 100 })) {
    if (++seen > SEARCH_LIMIT) break;
    const meta = (run.metadata ?? {}) as Record<string, unknown>;
    if (run.id !== candidateId && meta[META.experiment] === x.name && meta[META.branch] === branch) {
      const commit =
        typeof meta[META.commit] === 'string' ? ` at ${String(meta[META.commit]).slice(0, 12)}` : '';
      return { run, note: `run ${run.id}, the latest of experiment ${x.name} on ${branch}${commit}` };
    }
  }
  return { run: null, note: `no baseline: no completed run of experiment ${x.name} on branch ${branch} yet` };
}
