// Database-independent: the CLI's run bodies and output; session runs run on both databases in test/sessions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliExit } from '../../src/cli/client-context.js';
import { runBody } from '../../src/cli/run-body.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { hasBwrap } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';
import { setUpSimulation, simulateReply } from '../sessions/simulate-mock.js';
import { evalgate } from './cli-helpers.js';

const base = { container: 'app', evaluator: ['turns'], metadata: [] as string[] };

describe('runs create --sessions / --simulate: the run body', () => {
  it('--sessions C reads the container’s sessions, as sample and (no reference) ground truth', () => {
    expect(runBody({ ...base, sessions: 'agents', range: '0:20' })).toEqual({
      container: 'app',
      evaluators: ['turns'],
      sample: { type: 'sessions', container: 'agents', range: '0:20' },
      ground_truth: { type: 'sessions', container: 'agents', range: '0:20' },
    });
    expect(runBody({ ...base, sessions: 'agents', groundTruth: 'dataset:expected' }).ground_truth).toEqual({
      type: 'dataset',
      dataset: 'expected',
    });
  });

  it('--simulate M --user-model U --max-turns N takes its scenarios from the ground truth', () => {
    expect(
      runBody({
        ...base,
        simulate: 'a, b',
        userModel: 'user',
        maxTurns: '4',
        groundTruth: 'dataset:scenarios',
        range: '10:20',
      }),
    ).toEqual({
      container: 'app',
      evaluators: ['turns'],
      sample: { type: 'simulate', models: ['a', 'b'], user_model: 'user', max_turns: 4, range: '0:10' },
      ground_truth: { type: 'dataset', dataset: 'scenarios', range: '10:20' },
    });
  });

  it('refuses flags that do not fit', () => {
    const bad = [
      { ...base, sessions: 'agents', dataset: 'qa' },
      { ...base, simulate: 'a' },
      { ...base, simulate: 'a', userModel: ' ' },
      { ...base, simulate: 'a', userModel: 'u', maxTurns: 'many' },
      { ...base, simulate: 'a', userModel: 'u', maxTurns: '0' },
      { ...base, dataset: 'qa', userModel: 'u' },
      { ...base, sessions: 'agents', maxTurns: '3' },
    ];
    for (const flags of bad) expect(() => runBody(flags), JSON.stringify(flags)).toThrow(CliExit);
  });
});

describe('evalgate runs create --simulate, then --sessions over what it simulated', () => {
  let mock: MockUpstream;
  let h: Harness;

  beforeAll(async () => {
    mock = await startMockUpstream({ reply: simulateReply });
    h = await startHarness({ env: hasBwrap ? {} : { EVALGATE_UNSAFE_CODE_EVALUATORS: '1' } });
    await setUpSimulation(h, mock.baseUrl, 2);
    const r = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'code',
        name: 'turns',
        source: 'def evaluate(sample, ground_truth, baseline):\n    return {"score": len(sample["turns"])}\n',
      },
    });
    expect(r.status, r.text).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await mock?.close();
  });

  const finished = async (id: string) => {
    await waitFor(
      async () => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body.status === 'completed',
      90_000,
    );
    return (await h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=10`)).body.data as any[];
  };

  it('creates a simulate run and a session run from the flags', async () => {
    const sim = await evalgate(h, [
      ...['runs', 'create', '--container', 'sim', '--evaluator', 'turns', '--simulate', 'target'],
      ...['--user-model', 'simuser', '--max-turns', '5', '--ground-truth', 'dataset:scenarios', '--json'],
    ]);
    expect(sim.code, sim.stderr).toBe(0);
    const simRun = JSON.parse(sim.stdout);
    expect(simRun.sample).toMatchObject({ type: 'simulate', models: ['target'], user_model: 'simuser' });
    const simulated = await finished(simRun.id);
    expect(simulated.map((s) => s.score)).toEqual([4, 4]);

    const sessions = await evalgate(h, [
      ...[
        'runs',
        'create',
        '--container',
        'sim',
        '--evaluator',
        'turns',
        '--sessions',
        'sim',
        '--range',
        '0:10',
      ],
      '--json',
    ]);
    expect(sessions.code, sessions.stderr).toBe(0);
    const run = JSON.parse(sessions.stdout);
    expect(run.sample).toMatchObject({ type: 'sessions', range: '0:10' });
    const scored = await finished(run.id);
    expect(scored.map((s) => s.score)).toEqual([4, 4]);

    const all = await evalgate(h, [
      'runs',
      'create',
      '--container',
      'sim',
      '--evaluator',
      'turns',
      '--sessions',
      'sim',
      '--all',
    ]);
    expect(all.code).not.toBe(0);
    expect(all.stderr).toContain('--all does not count sessions');
    const missing = await evalgate(h, [
      'runs',
      'create',
      '--container',
      'sim',
      '--evaluator',
      'turns',
      '--sessions',
      'nowhere',
    ]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('nowhere');
  }, 240_000);
});
