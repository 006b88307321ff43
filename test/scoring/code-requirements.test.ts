// Database-independent: the sandbox's virtual environments, no store.
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCodeScorer } from '../../src/scoring/code/scorer.js';
import { createVenvCache } from '../../src/scoring/code/venv.js';
import { ScorerSetupError } from '../../src/scoring/types.js';
import { tempDir } from '../helpers/temp.js';
import { buildWheel } from '../helpers/wheels.js';
import { pairs, skipScoring, testOptions } from './helpers.js';

const SOURCE = `
from evalgate_probe import similarity

def evaluate(sample, ground_truth, baseline):
    return {"score": similarity(sample["output"], ground_truth["expected"])}
`;

describe.skipIf(skipScoring)('code evaluators: requirements', () => {
  const tmp = tempDir();
  const wheels = path.join(tmp.dir, 'wheels');
  const dataDir = path.join(tmp.dir, 'data');
  const base = testOptions(dataDir);
  const options = { ...base, pip: { ...base.pip, indexUrl: null, findLinks: [wheels] } };
  const inputs = pairs([
    { output: 'Paris', expected: 'paris' },
    { output: 'Lyon', expected: 'paris' },
  ]);

  beforeAll(() => {
    mkdirSync(wheels);
    buildWheel(wheels, 'evalgate_probe', '1.0');
  });
  afterAll(() => tmp.remove());

  it('installs a requirement from a local wheel once and reuses the environment', async () => {
    const venvCache = createVenvCache();
    const evaluator = { id: 'evl_req', source: SOURCE, requirements: ['evalgate_probe==1.0'] };
    // Two runs starting together share one build.
    const [first, second] = await Promise.all([
      createCodeScorer({ ...options, venvCache }, evaluator),
      createCodeScorer({ ...options, venvCache }, { ...evaluator, requirements: [' evalgate_probe==1.0'] }),
    ]);
    const signal = new AbortController().signal;
    for (const scorer of [first, second]) {
      const out = await scorer.scoreBatch(inputs, signal);
      expect(out.map((o) => [o.score, o.error])).toEqual([
        [1, null],
        [0, null],
      ]);
      await scorer.close();
    }
    expect(venvCache.installs).toBe(1);
    const venvs = readdirSync(path.join(dataDir, 'venvs'));
    expect(venvs).toHaveLength(1);
    expect(existsSync(path.join(dataDir, 'venvs', venvs[0]!, '.evalgate-ready'))).toBe(true);

    // Another process (a fresh cache) finds the built environment on disk.
    const otherProcess = createVenvCache();
    const third = await createCodeScorer({ ...options, venvCache: otherProcess }, evaluator);
    expect((await third.scoreBatch(inputs, signal)).map((o) => o.score)).toEqual([1, 0]);
    await third.close();
    expect(otherProcess.installs).toBe(0);
  });

  it('keeps the environment read-only for the evaluator', async () => {
    const source = `
import evalgate_probe, os
def evaluate(sample, ground_truth, baseline):
    with open(os.path.join(os.path.dirname(evalgate_probe.__file__), "__init__.py"), "a") as f:
        f.write("# tampered")
    return 1
`;
    const scorer = await createCodeScorer(options, {
      id: 'evl_ro',
      source,
      requirements: ['evalgate_probe==1.0'],
    });
    const [out] = await scorer.scoreBatch(inputs.slice(0, 1), new AbortController().signal);
    await scorer.close();
    expect(out!.error!.code).toBe('evaluator_exception');
    expect(out!.error!.message).toMatch(/Read-only file system|Permission denied/);
  });

  it('fails setup with requirements_install_failed and pip’s message for a missing requirement', async () => {
    const venvCache = createVenvCache();
    const err = await createCodeScorer(
      { ...options, venvCache },
      { id: 'evl_missing', source: SOURCE, requirements: ['evalgate-no-such-package==9.9'] },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScorerSetupError);
    expect((err as ScorerSetupError).code).toBe('requirements_install_failed');
    expect((err as ScorerSetupError).message).toContain(
      'No matching distribution found for evalgate-no-such-package',
    );
    // Nothing half-built is left to be mistaken for a ready environment.
    const left = readdirSync(path.join(dataDir, 'venvs')).filter((d) => !d.endsWith('.lock'));
    expect(left).toHaveLength(1);
  });
});
