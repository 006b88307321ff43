import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { openApiDocument } from '../helpers/routes.js';

/**
 * A client generated from the published document (openapi-typescript types + openapi-fetch) compiles
 * under strict TypeScript and makes real calls against the live server. SQLite project only: the
 * document does not depend on the database.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');

// A usage file as a user of the generated types writes it: checked by tsc, then run against the server.
const USAGE = `import createClient from 'openapi-fetch';
import type { paths } from './evalgate.js';

export async function run(baseUrl: string, key: string) {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${key}\` } });
  const container = await client.POST('/v1/containers', { body: { label: 'generated-app' } });
  if (!container.data) throw new Error(JSON.stringify(container.error));
  const created = await client.POST('/v1/evaluators', {
    body: { type: 'judge', name: 'generated', model: 'openai/gpt-4o-mini', prompt: 'Rate {{output}}' },
  });
  if (!created.data) throw new Error(JSON.stringify(created.error));
  const evaluatorId: string = created.data.id;
  const list = await client.GET('/v1/evaluators', { params: { query: { limit: 10 } } });
  const got = await client.GET('/v1/evaluators/{evaluator}', { params: { path: { evaluator: evaluatorId } } });
  const dataset = await client.POST('/v1/datasets', {
    body: { label: 'generated-qa', items: [{ input: 'q', output: 'a', expected: 'a' }] },
  });
  if (!dataset.data) throw new Error(JSON.stringify(dataset.error));
  const run = await client.POST('/v1/evaluation/runs', {
    body: {
      container: 'generated-app',
      evaluators: [evaluatorId],
      sample: { type: 'dataset', dataset: 'generated-qa', range: '0:1' },
      environment: 'main',
    },
  });
  if (!run.data) throw new Error(JSON.stringify(run.error));
  const side = run.data.sample;
  const sideType: 'dataset' | 'container' | 'generate' | 'sessions' | 'traces' | 'tool_steps' | 'simulate' | undefined = side?.type;
  const fetched = await client.GET('/v1/evaluation/runs/{run_id}', { params: { path: { run_id: run.data.id } } });
  const queued = await client.GET('/v1/evaluation/runs', { params: { query: { status: 'queued', limit: 5 } } });
  const completed = await client.GET('/v1/evaluation/runs', { params: { query: { status: 'completed' } } });
  const missing = await client.GET('/v1/evaluation/runs/{run_id}', { params: { path: { run_id: 'run_missing' } } });
  return {
    evaluatorId,
    listed: list.data?.data.map((e) => e.id) ?? [],
    gotName: got.data?.name,
    runId: run.data.id,
    sideType,
    fetchedId: fetched.data?.id,
    fetchedStatus: fetched.data?.status,
    runStatusesListed: [...(queued.data?.data ?? []), ...(completed.data?.data ?? [])].map((r) => r.status),
    missingStatus: missing.response.status,
    missingCode: missing.error && 'error' in missing.error ? missing.error.error.code : undefined,
    rateLimit: list.response.headers.get('x-ratelimit-limit'),
  };
}
`;

let h: Harness;
let dir: string;
beforeAll(async () => {
  h = await startHarness({
    env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
  });
  // Under node_modules so that the usage file resolves openapi-fetch from the project.
  fs.mkdirSync(path.join(ROOT, 'node_modules/.cache'), { recursive: true });
  dir = fs.mkdtempSync(path.join(ROOT, 'node_modules/.cache/evalgate-client-'));
});
afterAll(async () => {
  await h?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(testDbKind() !== 'sqlite')('a client generated from /openapi.json', () => {
  it('compiles under strict TypeScript and makes real calls', async () => {
    const doc = await openApiDocument(h);
    const types = astToString(await openapiTS(doc));
    fs.writeFileSync(path.join(dir, 'evalgate.ts'), types);
    fs.writeFileSync(path.join(dir, 'usage.ts'), USAGE);
    fs.writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    const args = [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext'];
    args.push('--moduleResolution', 'nodenext', '--skipLibCheck', '--types', 'node');
    try {
      execFileSync(process.execPath, [...args, 'evalgate.ts', 'usage.ts'], { cwd: dir, encoding: 'utf8' });
    } catch (err) {
      throw new Error(`tsc: ${(err as { stdout?: string }).stdout ?? err}`);
    }
    // The data-source variants reach the generated types as a union discriminated by `type`.
    expect(types).toMatch(/type: "dataset"/);

    const usage = (await import(path.join(dir, 'usage.ts'))) as {
      run(baseUrl: string, key: string): Promise<Record<string, unknown>>;
    };
    const result = await usage.run(h.url, h.admin.key);
    expect(result.listed).toContain(result.evaluatorId);
    expect(result.gotName).toBe('generated');
    expect(result.sideType).toBe('dataset');
    expect(result.fetchedId).toBe(result.runId);
    expect(['queued', 'running', 'completed', 'error']).toContain(result.fetchedStatus);
    for (const s of result.runStatusesListed as string[]) expect(['queued', 'completed']).toContain(s);
    expect(result.missingStatus).toBe(404);
    expect(result.missingCode).toBe('not_found');
    expect(Number(result.rateLimit)).toBeGreaterThan(0);
  }, 60_000);
});
