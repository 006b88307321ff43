import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Evalgate } from '../../src/client/index.js';
import { evalgate, evalgateJson } from '../cli/cli-helpers.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';

/* `evalgate guards list|get|create|delete|verdicts` and the TypeScript client's `guards` against a real server. */

let h: Harness;
const dir = tempDir('evalgate-guards-cli-');
beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
  dir.remove();
});

describe('evalgate guards', () => {
  it('creates from a file, lists, shows and deletes a policy', async () => {
    const file = path.join(dir.dir, 'policy.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        name: 'from-file',
        checks: [{ name: 'pii', guard: { type: 'pii' }, action: 'redact' }],
      }),
    );
    const created = await evalgateJson(h, ['guards', 'create', '--file', file, '--name', 'cli-policy']);
    expect(created).toMatchObject({
      name: 'cli-policy',
      checks: [{ name: 'pii', stage: 'input', action: 'redact' }],
    });
    const listed = await evalgate(h, ['guards', 'list']);
    expect(listed.stdout).toContain('cli-policy');
    const shown = await evalgate(h, ['guards', 'get', 'cli-policy']);
    expect(shown.stdout).toContain('redact');
    const verdicts = await evalgateJson(h, ['guards', 'verdicts', '--verdict', 'blocked']);
    expect(verdicts).toEqual([]);
    const bad = await evalgate(h, ['guards', 'verdicts', '--verdict', 'nope']);
    expect(bad.code).not.toBe(0);
    const deleted = await evalgate(h, ['guards', 'delete', 'cli-policy']);
    expect(deleted.stdout).toContain('deleted grd_');
  }, 180_000);
});

describe('client.guards', () => {
  it('creates, gets, updates, lists and deletes a policy', async () => {
    const client = new Evalgate({ baseURL: h.url, apiKey: h.admin.key, maxRetries: 0 });
    const p = await client.guards.create({
      name: 'client',
      checks: [{ name: 's', guard: { type: 'secrets' } }],
    });
    expect((await client.guards.get('client')).id).toBe(p.id);
    expect((await client.guards.update('client', { enabled: false })).enabled).toBe(false);
    const names: string[] = [];
    for await (const x of client.guards.list()) names.push(x.name);
    expect(names).toContain('client');
    expect(await client.guards.delete(p.id)).toEqual({ id: p.id, object: 'guard_policy', deleted: true });
  });
});
