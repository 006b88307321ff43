import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { evalgate, evalgateJson, scriptedReply, seed } from './cli-helpers.js';

// What a new user trips on in the CLI: a range that hides rows, a percentage for a ratio, an inline
// prompt. The CLI over the client, once, on SQLite (test/client covers both databases).
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  mock = await startMockUpstream({ reply: scriptedReply });
  h = await startHarness();
  await seed(h, mock.baseUrl, 'big-app');
  const items = Array.from({ length: 150 }, (_, i) => ({
    input: `q${i}`,
    output: `a${i}`,
    expected: `a${i}`,
  }));
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'big', items } })).status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe.skipIf(testDbKind() === 'postgres')('the CLI says what a new user needs to know', () => {
  it('creates a judge from an inline --prompt, and refuses it beside --prompt-file', async () => {
    const made = await evalgate(h, [
      ...['evaluators', 'create', '--type', 'judge', '--name', 'inline', '--model', 'judge'],
      ...['--prompt', 'Compare OUT<<{{output}}>> with EXP<<{{expected}}>>', '--json'],
    ]);
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout).prompt).toBe('Compare OUT<<{{output}}>> with EXP<<{{expected}}>>');
    const both = await evalgate(h, [
      ...['evaluators', 'create', '--type', 'judge', '--model', 'judge', '--prompt', 'x'],
      ...['--prompt-file', 'README.md'],
    ]);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/--prompt or --prompt-file/);
  });

  it('says when the default range leaves rows out, and --all covers them', async () => {
    const partial = await evalgate(h, [
      ...['runs', 'create', '--container', 'big-app', '--evaluator', 'inline', '--dataset', 'big', '--json'],
    ]);
    expect(partial.code, partial.stderr).toBe(0);
    expect(partial.stderr).toContain(
      'sample: evaluating 100 of 150 rows (default range 0:100); --range 0:150 or --all',
    );
    expect(JSON.parse(partial.stdout).sample.range).toBe('0:100');

    const all = await evalgate(h, [
      ...['runs', 'create', '--container', 'big-app', '--evaluator', 'inline', '--dataset', 'big', '--all'],
      '--json',
    ]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stderr).not.toContain('evaluating');
    const run = JSON.parse(all.stdout);
    expect(run.sample.range).toBe('0:150');
    expect(run.ground_truth.range).toBe('0:150');

    const clash = await evalgate(h, [
      ...['runs', 'create', '--container', 'big-app', '--evaluator', 'inline', '--dataset', 'big'],
      ...['--all', '--range', '0:10'],
    ]);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(/--range or --all/);
  });

  it('refuses a percentage where --fail-under takes a ratio, saying which ratio was meant', async () => {
    const res = await evalgate(h, [
      ...['runs', 'create', '--container', 'big-app', '--evaluator', 'inline', '--dataset', 'big'],
      ...['--fail-under', 'accuracy=80'],
    ]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('accuracy is a ratio from 0 to 1, got "80" (did you mean accuracy=0.8?)');
  });

  it('lists the newest task logs first, in seq order with --range', async () => {
    for (let i = 1; i <= 7; i++) {
      const res = await h.call('POST', '/v1/chat/completions', {
        headers: { 'x-evalgate-container': 'big-app' },
        body: { model: 'gen-a', messages: [{ role: 'user', content: `call ${i}` }] },
      });
      expect(res.status).toBe(200);
    }
    await waitFor(async () => (await h.call('GET', '/v1/containers/big-app/logs')).body.total === 7);
    const newest = await evalgateJson(h, ['logs', 'list', '--container', 'big-app', '--limit', '5']);
    expect(newest.map((l: { seq: number }) => l.seq)).toEqual([7, 6, 5, 4, 3]);
    const table = await evalgate(h, ['logs', 'list', '--container', 'big-app', '--limit', '5']);
    expect(table.stdout).toContain('5 of 7 logs');
    const ranged = await evalgateJson(h, ['logs', 'list', '--container', 'big-app', '--range', '0:2']);
    expect(ranged.map((l: { seq: number }) => l.seq)).toEqual([1, 2]);
  });

  it('shows the input and the whole exception of an errored sample', { timeout: 90_000 }, async () => {
    const source = [
      'def evaluate(sample, ground_truth, baseline):',
      '    raise ValueError("cannot read " + sample["output"])',
    ].join('\n');
    expect(
      (await h.call('POST', '/v1/evaluators', { body: { type: 'code', name: 'raises', source } })).status,
    ).toBe(201);
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'big-app',
        evaluators: ['raises'],
        sample: { type: 'dataset', dataset: 'big', range: '0:2' },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const path = `/v1/evaluation/runs/${created.body.id}`;
    await waitFor(async () => (await h.call('GET', path)).body.status === 'completed', 60_000);
    const res = await evalgate(h, ['runs', 'samples', created.body.id, '--errored']);
    expect(res.code, res.stderr).toBe(0);
    // The table: an input column, and the exception line rather than "Traceback (most re…".
    expect(res.stdout).toMatch(/│ input +│ output/);
    expect(res.stdout).toMatch(/│ q0 +│ a0 /);
    expect(res.stdout).toContain('ValueError: cannot read a0');
    expect(res.stdout).not.toContain('Traceback (most re…');
    // Below it, the whole traceback of each errored sample.
    expect(res.stdout).toMatch(/raises at position 0 \(launch 0\):\n {2}evaluator_exception: Traceback/);
    expect(res.stdout).toContain('  ValueError: cannot read a1');
  });

  it('imports logs recorded elsewhere from a JSON array or JSON lines', async () => {
    await h.call('POST', '/v1/containers', { body: { label: 'imported' } });
    const dir = tempDir('evalgate-import-').dir;
    const entry = (i: number) => ({ model: 'elsewhere', input: `asked ${i}`, output: `said ${i}` });
    fs.writeFileSync(path.join(dir, 'logs.json'), JSON.stringify([entry(1), entry(2)]));
    fs.writeFileSync(
      path.join(dir, 'logs.jsonl'),
      [entry(3), entry(4), entry(5)].map((e) => JSON.stringify(e)).join('\n'),
    );
    const array = await evalgate(h, [
      'logs',
      'import',
      path.join(dir, 'logs.json'),
      '--container',
      'imported',
    ]);
    expect(array.code, array.stderr).toBe(0);
    expect(array.stdout).toContain('Imported 2 logs into imported (seq 1–2)');
    const lines = await evalgateJson(h, [
      'logs',
      'import',
      path.join(dir, 'logs.jsonl'),
      '--container',
      'imported',
    ]);
    expect(lines).toMatchObject({ object: 'task_log.import', imported: 3, first_seq: 3, last_seq: 5 });
    const listed = await evalgateJson(h, ['logs', 'list', '--container', 'imported']);
    expect(listed.map((l: { output: string }) => l.output)).toEqual([
      'said 5',
      'said 4',
      'said 3',
      'said 2',
      'said 1',
    ]);
    const missing = await evalgate(h, [
      'logs',
      'import',
      path.join(dir, 'nope.jsonl'),
      '--container',
      'imported',
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no such file/);
  });
});
