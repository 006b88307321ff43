import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Evalgate } from '../../src/client/index.js';
import { evalgate, evalgateJson } from '../cli/cli-helpers.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';

// The TypeScript client's dataset-version methods and the CLI's `datasets add|remove|versions|diff|export`
// over a live server (the routes themselves are covered on both databases by datasets-versions.test.ts).
let h: Harness;
let client: Evalgate;
let dir: string;
let logId: string;

beforeAll(async () => {
  h = await startHarness();
  client = new Evalgate({ apiKey: h.admin.key, baseURL: h.url, maxRetries: 0 });
  dir = tempDir('evalgate-dsv-').dir;
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  await h.call('POST', '/v1/containers/c/logs', {
    body: [
      { model: 'm', input: [{ role: 'user', content: 'two plus two?' }], output: 'five', status: 'success' },
    ],
  });
  await h.services.logWriter.flush();
  logId = (await h.call('GET', '/v1/containers/c/logs')).body.data[0].id;
});
afterAll(async () => {
  await h?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the client', () => {
  it('adds, edits, removes, lists versions, diffs and exports', async () => {
    const ds = await client.datasets.create({ label: 'c-grow', items: [{ input: 'a', expected: 'A' }] });
    const added = await client.datasets.addItems('c-grow', [
      { id: 'b', input: 'b', expected: 'B', splits: ['test'] },
      { from: { task_log_id: logId }, expected: 'four' },
    ]);
    expect(added).toMatchObject({ version: 2, item_count: 3 });
    expect(added.items[1]?.data).toMatchObject({ output: 'five', expected: 'four' });
    const edited = await client.datasets.updateItem('c-grow', 'b', { expected: 'BB' });
    expect(edited.version).toBe(3);
    const removed = await client.datasets.deleteItem('c-grow', `${ds.id}:0`);
    expect(removed.version).toBe(4);
    const versions = await client.datasets.versions('c-grow');
    expect(versions.data.map((v) => v.version)).toEqual([4, 3, 2, 1]);
    const v2 = await client.datasets.items('c-grow', { version: 2 });
    expect(v2.data.map((i) => i.id)).toEqual([`${ds.id}:0`, 'b', added.items[1]?.id]);
    const diff = await client.datasets.diff('c-grow', { from: 1 });
    expect(diff).toMatchObject({ from_version: 1, to_version: 4 });
    expect(diff.removed.map((i) => i.id)).toEqual([`${ds.id}:0`]);
    const csv = await (await client.datasets.export('c-grow', { format: 'csv', split: 'test' })).text();
    expect(csv).toBe('id,input,output,expected,metadata,splits\r\n"b","b","","BB","","[""test""]"\r\n');
    await expect(client.datasets.updateItem('c-grow', 'nope', { expected: 'x' })).rejects.toMatchObject({
      status: 404,
    });
  });
});

describe.skipIf(testDbKind() === 'postgres')('the CLI', { timeout: 300_000 }, () => {
  it('adds from a task log, lists versions, diffs and exports', async () => {
    await h.call('POST', '/v1/datasets', {
      body: { label: 'cli-grow', items: [{ input: 'x', expected: 'X' }] },
    });
    const change = await evalgateJson(h, [
      'datasets',
      'add',
      'cli-grow',
      '--from-log',
      logId,
      '--split',
      'reg',
    ]);
    expect(change).toMatchObject({ version: 2, items: [{ splits: ['reg'], data: { output: 'five' } }] });
    const plain = await evalgateJson(h, [
      'datasets',
      'add',
      'cli-grow',
      '--input',
      '{"q":1}',
      '--expected',
      'one',
    ]);
    expect(plain.items[0].data).toEqual({ input: { q: 1 }, expected: 'one' });
    const versions = await evalgateJson(h, ['datasets', 'versions', 'cli-grow']);
    expect(versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    const diff = await evalgate(h, ['datasets', 'diff', 'cli-grow', '--from', '1']);
    expect(diff.code, diff.stderr).toBe(0);
    expect(diff.stdout).toContain('Version 1 → 3: 2 added, 0 removed, 0 changed');
    const out = path.join(dir, 'v2.csv');
    const exported = await evalgate(h, ['datasets', 'export', 'cli-grow', '--version', '2', '--output', out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(fs.readFileSync(out, 'utf8').split('\r\n')).toHaveLength(4);
    const jsonl = await evalgate(h, ['datasets', 'export', 'cli-grow', '--split', 'reg']);
    expect(
      jsonl.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).output),
    ).toEqual(['five']);
    const both = await evalgate(h, [
      'datasets',
      'add',
      'cli-grow',
      '--from-log',
      logId,
      '--from-session',
      's',
    ]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('at most one');
    const missing = await evalgate(h, ['datasets', 'add', 'cli-grow', '--from-log', 'log_nope']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('not found');
  });
});
