import fs from 'node:fs';
import path from 'node:path';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import type { Harness } from '../helpers/harness.js';
import { scriptedReply, seed } from './cli-helpers.js';

/** A server with the scripted mock upstream, judges and a dataset for `evalgate ci` tests. */

export const ROWS = 20;

/**
 * Registers the scripted models, container `app`, judges `exact` (OUT equals EXP) and `lenient` (OUT
 * mentions "good"), and dataset `qa` whose expected answers are what gen-a says: gen-a scores 1 on every
 * row, gen-b 0 on every row (a regression at any confidence).
 */
export async function seedCi(h: Harness): Promise<MockUpstream> {
  const mock = await startMockUpstream({ reply: scriptedReply });
  await seed(h, mock.baseUrl, 'app');
  const judge = async (name: string, prompt: string) => {
    const res = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name, model: 'judge', prompt, pass_threshold: 0.5 },
    });
    if (res.status !== 201) throw new Error(`judge ${name}: ${res.text}`);
  };
  await judge('exact', 'Compare OUT<<{{output}}>> with EXP<<{{expected}}>>');
  await judge('lenient', 'Is it good? OUT<<{{output}}>>');
  const items = Array.from({ length: ROWS }, (_, i) => ({
    id: `q${i}`,
    input: `q${i}`,
    expected: `gen-a:q${i}`,
  }));
  const res = await h.call('POST', '/v1/datasets', { body: { label: 'qa', items } });
  if (res.status !== 201) throw new Error(`dataset: ${res.text}`);
  return mock;
}

/** An experiment file `qa` with the candidate given, written into dir. */
export function experimentFile(dir: string, candidate: string, extra = ''): string {
  const file = path.join(dir, `evalgate-${Math.random().toString(36).slice(2)}.yaml`);
  fs.writeFileSync(
    file,
    `version: 1
experiments:
  qa:
    container: app
    dataset:
      name: qa
      range: "0:${ROWS}"
    candidate: ${candidate}
    evaluators: [exact, lenient]
    baseline:
      branch: main
    gates:
      exact:
        drop_at_confidence: 0.95
        max_error_rate: 0.1
      lenient:
        max_drop: 0.5
${extra}`,
  );
  return file;
}
