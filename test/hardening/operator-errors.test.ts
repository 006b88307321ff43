// Database-independent: the code scorer's sandbox and virtual environments, no store.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCodeScorer } from '../../src/scoring/code/scorer.js';
import { createVenvCache, packageSources } from '../../src/scoring/code/venv.js';
import { ScorerSetupError } from '../../src/scoring/types.js';
import { tempDir } from '../helpers/temp.js';
import { skipScoring, testOptions } from '../scoring/helpers.js';

/**
 * Issue 15, item 10a: a requirements install that fails says where pip looked and which settings
 * choose that, instead of pip's "Could not find a version" alone.
 */
describe('where pip looked, in the message of a failed install', () => {
  const pip = { indexUrl: null, findLinks: [], timeoutMs: 1000 };

  it('names the default index when neither setting is given', () => {
    expect(packageSources(pip)).toBe(
      'Packages were looked for in the default index https://pypi.org/simple (EVALGATE_PIP_INDEX_URL is not set); ' +
        'EVALGATE_PIP_INDEX_URL and EVALGATE_PIP_FIND_LINKS set where.',
    );
  });

  it('names the configured index without its credentials, and the find-links', () => {
    const text = packageSources({
      ...pip,
      indexUrl: 'https://ci:s3cret@pypi.internal.example/simple',
      findLinks: ['/srv/wheels'],
    });
    expect(text).toContain('the index https://pypi.internal.example/simple and the find-links /srv/wheels');
    expect(text).not.toContain('s3cret');
    expect(text).toContain('EVALGATE_PIP_INDEX_URL');
    expect(text).toContain('EVALGATE_PIP_FIND_LINKS');
  });

  it('says when only find-links were used', () => {
    expect(packageSources({ ...pip, findLinks: ['/srv/wheels', 'https://u:p@wheels.example/'] })).toContain(
      'only the find-links /srv/wheels, https://wheels.example/ (no index)',
    );
  });
});

describe.skipIf(skipScoring)('a failed install, end to end', () => {
  const tmp = tempDir();
  afterAll(() => tmp.remove());

  it('adds the sources to pip’s own message', async () => {
    const wheels = path.join(tmp.dir, 'wheels');
    mkdirSync(wheels);
    const base = testOptions(path.join(tmp.dir, 'data'));
    const options = {
      ...base,
      pip: { ...base.pip, indexUrl: null, findLinks: [wheels] },
      venvCache: createVenvCache(),
    };
    const err = await createCodeScorer(options, {
      id: 'evl_sources',
      source: 'def evaluate(sample, ground_truth, baseline):\n    return 1\n',
      requirements: ['evalgate-no-such-package==9.9'],
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScorerSetupError);
    const message = (err as ScorerSetupError).message;
    expect(message).toContain('No matching distribution found for evalgate-no-such-package');
    expect(message).toContain(`only the find-links ${wheels} (no index)`);
    expect(message).toMatch(/EVALGATE_PIP_INDEX_URL and EVALGATE_PIP_FIND_LINKS/);
  });
});
