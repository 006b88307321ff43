import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evalgate, evalgateJson } from '../cli/cli-helpers.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';

/* `evalgate prompts list|get|create|version|label|diff|rollback` against a real server. */

let h: Harness;
const dir = tempDir('evalgate-prompts-cli-');
beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
  dir.remove();
});

describe('evalgate prompts', () => {
  it('creates, versions, labels, diffs and rolls back a prompt', async () => {
    const file = path.join(dir.dir, 'v1.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        messages: [{ role: 'system', content: 'Greet {{name}} in {{n}} words' }],
        variables: { n: 'number' },
        parameters: { temperature: 0.2 },
      }),
    );
    const created = await evalgateJson(h, [
      'prompts',
      'create',
      'cli-greeter',
      '--file',
      file,
      '--model',
      'openai/gpt-4o-mini',
      '--label',
      'production',
      '-m',
      'first',
    ]);
    expect(created).toMatchObject({
      name: 'cli-greeter',
      latest_version: 1,
      labels: { production: 1, latest: 1 },
    });
    expect(created.version.variables).toEqual({ n: 'number', name: 'string' });

    const v2 = await evalgate(h, [
      'prompts',
      'version',
      'cli-greeter',
      '--system',
      'Hi {{name}}!',
      '-m',
      'shorter',
      '--label',
      'staging',
    ]);
    expect(v2.code, v2.stderr).toBe(0);
    expect(v2.stdout).toContain('version 2');

    const list = await evalgate(h, ['prompts', 'list']);
    expect(list.stdout).toContain('cli-greeter');
    expect(list.stdout).toContain('production=1');

    const shown = await evalgate(h, ['prompts', 'get', 'cli-greeter', '--label', 'production']);
    expect(shown.stdout).toContain('Greet {{name}} in {{n}} words');
    expect(shown.stdout).toContain('first');

    const diff = await evalgate(h, ['prompts', 'diff', 'cli-greeter', '1', '2']);
    expect(diff.stdout).toContain('-Greet {{name}} in {{n}} words');
    expect(diff.stdout).toContain('+Hi {{name}}!');
    expect(diff.stdout).toContain('parameters.temperature: 0.2 → null');

    const moved = await evalgate(h, ['prompts', 'label', 'cli-greeter', 'production', '2']);
    expect(moved.stdout).toContain('production: 1 → 2');
    const back = await evalgateJson(h, ['prompts', 'rollback', 'cli-greeter', 'production']);
    expect(back).toMatchObject({ version: 1, previous_version: 2 });
    const removed = await evalgate(h, ['prompts', 'label', 'cli-greeter', 'staging', '--delete']);
    expect(removed.code).toBe(0);
    expect((await evalgateJson(h, ['prompts', 'get', 'cli-greeter'])).labels).toEqual({
      production: 1,
      latest: 2,
    });
  }, 120_000);

  it('answers bad input with a clear message and a non-zero exit', async () => {
    const unknown = await evalgate(h, ['prompts', 'get', 'no-such-prompt']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("Prompt 'no-such-prompt' not found");
    const noMessages = await evalgate(h, ['prompts', 'create', 'x']);
    expect(noMessages.code).toBe(1);
    expect(noMessages.stderr).toContain('give the messages');
    const noVersion = await evalgate(h, ['prompts', 'label', 'cli-greeter', 'production']);
    expect(noVersion.stderr).toContain('give the version');
    const badVersion = await evalgate(h, ['prompts', 'label', 'cli-greeter', 'production', '99']);
    expect(badVersion.code).not.toBe(0);
    expect(badVersion.stderr).toContain('no version 99');
  }, 120_000);
});
