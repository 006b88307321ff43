import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type TempDir, tempDir } from '../helpers/temp.js';
import { evalgate, scriptedReply, seed } from './cli-helpers.js';

// The README's dataset run: its rows have no `output`, so every position is missing, and says why.
let h: Harness;
let mock: MockUpstream;
let temp: TempDir | undefined;
let dir = '';

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  mock = await startMockUpstream({ reply: scriptedReply });
  h = await startHarness();
  await seed(h, mock.baseUrl, 'support-bot');
  temp = tempDir('missing-cli-');
  dir = temp.dir;
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
  temp?.remove();
});

describe.skipIf(testDbKind() === 'postgres')('the CLI says why positions are missing', () => {
  it('runs the README dataset run: the summary and runs samples name the reason', async () => {
    const source = path.join(dir, 'exact_match.py');
    fs.writeFileSync(
      source,
      [
        'def evaluate(sample, ground_truth, baseline):',
        '    if ground_truth is None:',
        '        return None',
        '    return sample["output"].strip() == ground_truth["expected"].strip()',
        '',
      ].join('\n'),
    );
    const made = await evalgate(h, [
      ...['evaluators', 'create', '--type', 'code', '--name', 'exact-match', '--source-file', source],
    ]);
    expect(made.code, made.stderr).toBe(0);
    const qa = path.join(dir, 'qa.jsonl');
    fs.writeFileSync(
      qa,
      '{"input": "How do I reset my password?", "expected": "Use the link on the sign-in page."}\n' +
        '{"input": "Can I change my email?", "expected": "Yes, under Settings."}\n',
    );
    const upload = await evalgate(h, ['datasets', 'upload', qa, '--label', 'qa']);
    expect(upload.code, upload.stderr).toBe(0);

    const run = await evalgate(h, [
      ...['runs', 'create', '--container', 'support-bot', '--evaluator', 'exact-match', '--dataset', 'qa'],
      '--watch',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('2 missing: the sample has no output');
    const runId = /(run_\w+) completed/.exec(run.stdout)?.[1] ?? '';
    expect(runId).not.toBe('');
    expect(run.stdout).toContain(`see: evalgate runs samples ${runId} --missing`);

    const shown = await evalgate(h, ['runs', 'samples', runId, '--missing']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('why missing');
    expect(shown.stdout.match(/the sample has no output/g)).toHaveLength(2);

    const got = await evalgate(h, ['runs', 'get', runId]);
    expect(got.stdout).toContain('2 missing: the sample has no output');

    const both = await evalgate(h, ['runs', 'samples', runId, '--missing', '--errored']);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/at most one of --passed, --failed, --errored and --missing/);
  });
});
