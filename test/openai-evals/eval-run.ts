import type OpenAI from 'openai';
import { waitFor } from '../helpers/wait.js';

/** An eval run once it has ended (completed, failed or canceled), read through the official SDK. */
export async function finishedRun(client: OpenAI, evalId: string, runId: string) {
  let run = await client.evals.runs.retrieve(runId, { eval_id: evalId });
  await waitFor(
    async () => {
      run = await client.evals.runs.retrieve(runId, { eval_id: evalId });
      return ['completed', 'failed', 'canceled'].includes(run.status);
    },
    60_000,
    'eval run finished',
  );
  return run;
}
