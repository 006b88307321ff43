import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type TempDir, tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { type Block, codeBlocks, documents } from './blocks.js';

// The docs' code evaluators (Python blocks marked `<!-- test: skip (run as a code evaluator by the docs
// test's evaluator check) -->`) are what users paste into an evaluator's `source`, so that is how they
// are checked: each becomes a code evaluator through the API (with the `requirements: [...]` the text
// just above it gives) and scores a small dataset with ground truth and a baseline. An example must
// load and score at least one sample; the contract's stub (a body of `...`) must load and have every
// sample count as `invalid_return`, as the doc says of a `None` return. Once, on SQLite.
const ROOT = path.resolve(import.meta.dirname, '../..');
const EVALUATOR_CHECK = "run as a code evaluator by the docs test's evaluator check";

/** Rows on which each example has something to score: equal numbers, an "answer: N", a JSON object. */
const ROWS = [
  { input: 'six times seven?', output: '42', expected: '42' },
  { input: 'six times seven, with the answer marked?', output: 'answer: 42', expected: '42' },
  { input: 'an object with a', output: '{"a": 1}', expected: '1', metadata: { required_keys: ['a'] } },
];
const BASELINE = ROWS.map((row) => ({ ...row, output: `${row.output} (the baseline's longer answer)` }));

/** The blocks the check runs, each with its requirements (from the text just above it). */
function examples(): { block: Block; requirements: string[] }[] {
  return documents(ROOT).flatMap((file) => {
    const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
    return codeBlocks(file, ROOT)
      .filter((b) => b.lang === 'python' && b.skip === EVALUATOR_CHECK)
      .map((block) => {
        const above = lines.slice(Math.max(0, block.line - 5), block.line - 2).join('\n');
        const given = /`requirements: (\[[^`]*\])`/.exec(above);
        return { block, requirements: given ? (JSON.parse(given[1]!) as string[]) : [] };
      });
  });
}

let h: Harness;
let wheels: TempDir | undefined;

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  // In bubblewrap where it can start, else (a machine without it) as is. The examples' requirements are
  // fetched first with this machine's pip and its configuration (the indexes the Python client's venv
  // is built from), then installed by the server from those wheels alone (find-links, no index).
  const requirements = [...new Set(examples().flatMap((e) => e.requirements))];
  wheels = tempDir('evalgate-docs-wheels-');
  if (requirements.length > 0) {
    execFileSync(
      'python3',
      ['-m', 'pip', 'download', '--quiet', '--only-binary=:all:', '--dest', wheels.dir, ...requirements],
      { stdio: 'pipe', timeout: 120_000 },
    );
  }
  h = await startHarness({
    env: { EVALGATE_PIP_FIND_LINKS: wheels.dir },
  });
  const made = async (p: string, body: unknown) => {
    const res = await h.call('POST', p, { body });
    if (res.status >= 300) throw new Error(`${p}: ${res.status} ${res.text}`);
  };
  await made('/v1/containers', { label: 'docs' });
  await made('/v1/datasets', { label: 'rows', items: ROWS });
  await made('/v1/datasets', { label: 'baseline', items: BASELINE });
}, 180_000);
afterAll(async () => {
  await h?.close();
  wheels?.remove();
});

describe.skipIf(testDbKind() === 'postgres')("the docs' code evaluators", () => {
  const found = examples();

  it('finds the examples of docs/code-evaluators.md', () => {
    expect(found.filter((e) => e.block.file === 'docs/code-evaluators.md').length).toBeGreaterThanOrEqual(5);
  });

  for (const { block, requirements } of found) {
    const stub = /:\s*\n\s+\.\.\.\s*$/.test(block.code);
    it(`${block.file}:${block.line} ${stub ? 'loads, and its None counts as invalid_return' : 'scores'}`, {
      timeout: 300_000,
    }, async () => {
      const where = `${block.file}:${block.line}`;
      const created = await h.call('POST', '/v1/evaluators', {
        body: {
          type: 'code',
          name: `docs-${block.line}`,
          source: block.code,
          ...(requirements.length > 0 ? { requirements } : {}),
          ...(block.code.includes('baseline[') ? { mode: 'pairwise' } : {}),
        },
      });
      expect(created.status, `${where}: ${created.text}`).toBe(201);
      const dataset = { type: 'dataset', dataset: 'rows' };
      const run = await h.call('POST', '/v1/evaluation/runs', {
        body: {
          container: 'docs',
          evaluators: [created.body.id],
          sample: dataset,
          ground_truth: dataset,
          baseline: { type: 'dataset', dataset: 'baseline' },
        },
      });
      expect(run.status, `${where}: ${run.text}`).toBe(201);
      const get = () => h.call('GET', `/v1/evaluation/runs/${run.body.id}`);
      await waitFor(
        async () => ['completed', 'error', 'cancelled'].includes((await get()).body.status),
        240_000,
      );
      const done = (await get()).body;
      expect(done.status, `${where}: ${JSON.stringify(done.error)}`).toBe('completed');
      const figures = done.results.per_model[0].per_eval[created.body.id];
      const samples = await h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples?limit=100`);
      const rows = JSON.stringify(samples.body.data, null, 1);
      if (stub) {
        expect(figures, rows).toMatchObject({
          num_total: ROWS.length,
          num_scored: 0,
          num_errors: ROWS.length,
        });
        for (const row of samples.body.data) expect(row.error?.code, rows).toBe('invalid_return');
      } else {
        expect(figures.num_scored, `${where}: ${rows}`).toBeGreaterThan(0);
      }
    });
  }
});
