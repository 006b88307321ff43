/**
 * Eval runs are born as every run is (one function in the engine's store): an `Idempotency-Key` as on
 * `POST /v1/evaluation/runs` (same key and body → one run; another body → 409), the run's name kept on
 * the run (listed and filtered in `/v1/evaluation/runs`), and the run's `environment` honoured.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evalgate } from '../cli/cli-helpers.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { finishedRun } from './eval-run.js';

let h: Harness;
let client: OpenAI;
let evalId: string;

const criteria = [
  {
    type: 'string_check',
    name: 'exact',
    input: '{{sample.output_text}}',
    reference: '{{ item.answer }}',
    operation: 'eq',
  },
] as unknown as OpenAI.Evals.EvalCreateParams['testing_criteria'];

const content = [
  { item: { answer: 'Paris' }, sample: { output_text: 'Paris' } },
  { item: { answer: 'Rome' }, sample: { output_text: 'Roma' } },
];
const dataSource = { type: 'jsonl' as const, source: { type: 'file_content' as const, content } };

beforeAll(async () => {
  h = await startHarness({ env: { EVALGATE_ENVIRONMENTS: 'main,staging' } });
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
  const ev = await client.evals.create({
    name: 'capitals',
    data_source_config: {
      type: 'custom',
      item_schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
      include_sample_schema: true,
    },
    testing_criteria: criteria,
  });
  evalId = ev.id;
});
afterAll(() => h?.close());

/** The `runs` rows of the project stored under this idempotency key. */
async function runsUnderKey(key: string) {
  return h.services.db
    .selectFrom('runs')
    .select('id')
    .where('project_id', '=', h.admin.projectId)
    .where('idempotency_key', '=', key)
    .execute();
}

async function evalRunIds(): Promise<string[]> {
  const ids: string[] = [];
  for await (const run of client.evals.runs.list(evalId, { limit: 100 })) ids.push(run.id);
  return ids;
}

describe('an eval run with an Idempotency-Key', () => {
  it('the same key and body twice creates one eval run, through the official SDK', async () => {
    const before = await evalRunIds();
    const headers = { 'Idempotency-Key': 'eval-once-1' };
    const body = { name: 'once', data_source: dataSource };
    const first = await client.evals.runs.create(evalId, body, { headers });
    const second = await client.evals.runs.create(evalId, body, { headers });
    expect(second.id).toBe(first.id);
    expect(second).toMatchObject({ object: 'eval.run', eval_id: evalId, name: 'once' });
    expect(await runsUnderKey('eval-once-1')).toEqual([{ id: first.id }]);
    const after = await evalRunIds();
    expect(after.filter((id) => !before.includes(id))).toEqual([first.id]);
    // The run it made runs to completion, once.
    const run = await finishedRun(client, evalId, first.id);
    expect(run.status).toBe('completed');
    expect(run.result_counts).toEqual({ total: 2, passed: 1, failed: 1, errored: 0 });
    // Asked again after it ended: still the same run.
    expect((await client.evals.runs.create(evalId, body, { headers })).id).toBe(first.id);
  });

  it('two concurrent requests under one key make one run and both answer it', async () => {
    const headers = { 'Idempotency-Key': 'eval-race-1' };
    const body = { name: 'race', data_source: dataSource };
    const snapshots = async () =>
      (await h.services.db.selectFrom('datasets').select('id').where('label', 'like', 'eval-run:%').execute())
        .length;
    const before = await snapshots();
    const answers = await Promise.all(
      [0, 1, 2].map(() => client.evals.runs.create(evalId, body, { headers })),
    );
    expect(new Set(answers.map((a) => a.id)).size).toBe(1);
    expect(await runsUnderKey('eval-race-1')).toEqual([{ id: answers[0]!.id }]);
    // One snapshot of the inline rows is kept: the one the run reads.
    expect(await snapshots()).toBe(before + 1);
  });

  it('another body under a used key answers 409 idempotency_key_reused, in the envelope', async () => {
    const headers = { 'Idempotency-Key': 'eval-reused-1' };
    const first = await client.evals.runs.create(evalId, { name: 'a', data_source: dataSource }, { headers });
    const err = await client.evals.runs
      .create(evalId, { name: 'b', data_source: dataSource }, { headers })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.ConflictError);
    const conflict = err as InstanceType<typeof OpenAI.ConflictError>;
    expect(conflict.status).toBe(409);
    expect(conflict.code).toBe('idempotency_key_reused');
    expect(conflict.error).toMatchObject({ details: { run_id: first.id } });
    // The same key on the runs route (another request) is refused too: keys are per project.
    const other = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'evals', sample: { type: 'dataset', dataset: 'nope' }, evaluators: ['ev_none'] },
      headers: { 'idempotency-key': 'eval-reused-1' },
      unchecked: true,
    });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(await runsUnderKey('eval-reused-1')).toEqual([{ id: first.id }]);
  });

  it('without a key, each request is a run of its own', async () => {
    const body = { name: 'twice', data_source: dataSource };
    const a = await client.evals.runs.create(evalId, body);
    const b = await client.evals.runs.create(evalId, body);
    expect(a.id).not.toBe(b.id);
  });

  it('a key over 200 characters is a 400 in the OpenAI shape', async () => {
    const res = await h.call('POST', `/v1/evals/${evalId}/runs`, {
      body: { data_source: dataSource },
      headers: { 'idempotency-key': 'k'.repeat(201) },
      unchecked: true,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('bad_request');
  });

  it("another project's key gets 404 for the eval, with or without a key", async () => {
    const other = await h.key(['*'], 'elsewhere');
    for (const headers of [{}, { 'idempotency-key': 'eval-once-1' }] as Record<string, string>[]) {
      const res = await h.call('POST', `/v1/evals/${evalId}/runs`, {
        key: other.key,
        body: { data_source: dataSource },
        headers,
      });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });
});

describe("an eval run's name and environment", () => {
  it('keeps its name in /v1/evaluation/runs (get, list, filter), and a rename shows in the eval run', async () => {
    const created = await client.evals.runs.create(evalId, {
      name: 'nightly capitals',
      data_source: dataSource,
    });
    const got = await h.call('GET', `/v1/evaluation/runs/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body.name).toBe('nightly capitals');
    const listed = await h.call('GET', '/v1/evaluation/runs?name=nightly%20capitals');
    expect(listed.body.data.map((r: { id: string }) => r.id)).toEqual([created.id]);
    // The CLI's run list shows it beside the id.
    const cli = await evalgate(h, ['runs', 'list', '--container', 'evals', '--limit', '100']);
    expect(cli.code, cli.stderr).toBe(0);
    const line = cli.stdout.split('\n').find((l) => l.includes(created.id));
    expect(line).toContain('nightly capitals');
    // Unnamed: the eval's name, as the eval run shows it.
    const unnamed = await client.evals.runs.create(evalId, { data_source: dataSource });
    expect(unnamed.name).toBe('capitals run');
    expect((await h.call('GET', `/v1/evaluation/runs/${unnamed.id}`)).body.name).toBe('capitals run');
    // Renamed as a run: the eval run shows the new name.
    const renamed = await h.call('PATCH', `/v1/evaluation/runs/${created.id}`, { body: { name: 'renamed' } });
    expect(renamed.status).toBe(200);
    expect((await client.evals.runs.retrieve(created.id, { eval_id: evalId })).name).toBe('renamed');
  });

  it('runs in the environment it names (an Evalgate field), main by default; an unknown one is a 400', async () => {
    const staged = await client.evals.runs.create(evalId, {
      data_source: dataSource,
      environment: 'staging',
    } as OpenAI.Evals.RunCreateParams);
    const run = await finishedRun(client, evalId, staged.id);
    expect(run.status).toBe('completed');
    expect((await h.call('GET', `/v1/evaluation/runs/${staged.id}`)).body.environment).toBe('staging');
    const plain = await client.evals.runs.create(evalId, { data_source: dataSource });
    expect((await h.call('GET', `/v1/evaluation/runs/${plain.id}`)).body.environment).toBe('main');

    for (const environment of ['nowhere', 7]) {
      const bad = await h.call('POST', `/v1/evals/${evalId}/runs`, {
        body: { data_source: dataSource, environment },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('bad_request');
      expect(bad.body.error.details.issues).toEqual([
        expect.objectContaining({ loc: ['body', 'environment'], type: 'enum' }),
      ]);
      expect(bad.body.error.message).toMatch(/environment must be one of 'main', 'staging'/);
    }
  });
});
