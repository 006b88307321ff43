import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
let client: OpenAI;

const stringCheck = {
  type: 'string_check' as const,
  name: 'exact',
  input: '{{sample.output_text}}',
  reference: '{{item.answer}}',
  operation: 'eq' as const,
};
const custom = {
  type: 'custom' as const,
  item_schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
  include_sample_schema: true,
};

beforeAll(async () => {
  h = await startHarness();
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});

describe('/v1/evals with the official SDK', () => {
  it('creates, retrieves, updates and deletes an eval with every declared field', async () => {
    const created = await client.evals.create({
      name: 'capitals',
      metadata: { team: 'geo' },
      data_source_config: custom,
      testing_criteria: [stringCheck],
    });
    expect(created.object).toBe('eval');
    expect(created.id).toMatch(/^eval_/);
    expect(Number.isInteger(created.created_at)).toBe(true);
    expect(Math.abs(created.created_at - Date.now() / 1000)).toBeLessThan(120);
    expect(created.name).toBe('capitals');
    expect(created.metadata).toEqual({ team: 'geo' });
    expect(created.data_source_config).toEqual({
      type: 'custom',
      schema: expect.objectContaining({
        type: 'object',
        properties: expect.objectContaining({ item: custom.item_schema, sample: expect.any(Object) }),
        required: ['item', 'sample'],
      }),
    });
    expect(created.testing_criteria).toEqual([stringCheck]);

    const got = await client.evals.retrieve(created.id);
    expect(got).toEqual(created);
    const updated = await client.evals.update(created.id, {
      name: 'capitals v2',
      metadata: { team: 'maps' },
    });
    expect(updated.name).toBe('capitals v2');
    expect(updated.metadata).toEqual({ team: 'maps' });
    expect(updated.testing_criteria).toEqual([stringCheck]);

    const deleted = await client.evals.delete(created.id);
    expect(deleted).toEqual({ object: 'eval.deleted', deleted: true, eval_id: created.id });
    await expect(client.evals.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('derives the schema of logs and stored_completions configs and keeps their metadata filter', async () => {
    const logs = await client.evals.create({
      data_source_config: { type: 'stored_completions', metadata: { usecase: 'chatbot' } },
      testing_criteria: [stringCheck],
    });
    expect(logs.name).toBe('');
    expect(logs.metadata).toBeNull();
    expect(logs.data_source_config).toMatchObject({
      type: 'stored_completions',
      metadata: { usecase: 'chatbot' },
      schema: { required: ['item', 'sample'] },
    });
    const noSample = await client.evals.create({
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [stringCheck],
    });
    expect(noSample.data_source_config.schema).toMatchObject({ required: ['item'] });
  });

  it('lists with cursor pagination across pages, in both orders and by updated_at', async () => {
    const other = await startHarness();
    try {
      const c = new OpenAI({ apiKey: other.admin.key, baseURL: `${other.url}/v1`, maxRetries: 0 });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          (
            await c.evals.create({
              name: `e${i}`,
              data_source_config: custom,
              testing_criteria: [stringCheck],
            })
          ).id,
        );
      }
      const first = await c.evals.list({ limit: 2 });
      expect(first.data.map((e) => e.id)).toEqual(ids.slice(0, 2));
      expect(first.has_more).toBe(true);
      const all: string[] = [];
      for await (const e of c.evals.list({ limit: 2 })) all.push(e.id);
      expect(all).toEqual(ids);
      const desc = await c.evals.list({ limit: 3, order: 'desc' });
      expect(desc.data.map((e) => e.id)).toEqual(ids.slice(2).reverse());
      const raw = await other.call('GET', `/v1/evals?limit=2&after=${ids[3]}`);
      expect(raw.body).toMatchObject({ object: 'list', first_id: ids[4], last_id: ids[4], has_more: false });
      // Touch the first eval: it comes last by updated_at.
      await c.evals.update(ids[0] ?? '', { name: 'touched' });
      const byUpdate: string[] = [];
      for await (const e of c.evals.list({ limit: 2, order_by: 'updated_at' })) byUpdate.push(e.id);
      expect(byUpdate).toEqual([...ids.slice(1), ids[0]]);
    } finally {
      await other.close();
    }
  });

  it('answers 400 naming every problem, never a 500', async () => {
    const err = await client.evals
      .create({
        data_source_config: { type: 'custom', item_schema: { type: 'nonsense-type' } },
        testing_criteria: [
          { type: 'string_check', name: 'x', input: 'a', reference: 'b', operation: 'nope' },
        ],
        metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])),
      } as unknown as OpenAI.Evals.EvalCreateParams)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const message = (err as Error).message;
    expect(message).toMatch(/item_schema/);
    expect(message).toMatch(/testing_criteria\.0\.operation/);
    expect(message).toMatch(/17 keys/);
    const issues = (
      (err as InstanceType<typeof OpenAI.APIError>).error as { details?: { issues?: unknown[] } }
    ).details?.issues;
    expect(issues?.length).toBeGreaterThanOrEqual(3);

    const longKey = await client.evals
      .create({
        data_source_config: custom,
        testing_criteria: [stringCheck],
        metadata: { ['k'.repeat(65)]: 'v', a: 'x'.repeat(513) },
      })
      .catch((e: unknown) => e);
    expect((longKey as Error).message).toMatch(/64 characters/);
    expect((longKey as Error).message).toMatch(/512 characters/);

    // What no database stores as sent (PostgreSQL text refuses U+0000): 400 naming where, not a 500.
    const nul = await client.evals
      .create({ name: 'a\u0000b', data_source_config: custom, testing_criteria: [stringCheck] })
      .catch((e: unknown) => e);
    expect(nul).toBeInstanceOf(OpenAI.BadRequestError);
    expect((nul as Error).message).toMatch(/name: String must not contain NUL/);

    const missing = await h.call('POST', '/v1/evals', { body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toMatch(/data_source_config: Field required/);
    expect(missing.body.error.message).toMatch(/testing_criteria/);
    const badQuery = await h.call('GET', '/v1/evals?limit=0&order=sideways');
    expect(badQuery.status).toBe(400);
    const created = await client.evals.create({
      data_source_config: custom,
      testing_criteria: [stringCheck],
    });
    const badUpdate = await h.call('POST', `/v1/evals/${created.id}`, { body: { testing_criteria: [] } });
    expect(badUpdate.status).toBe(400);
    expect(badUpdate.body.error.message).toMatch(/testing_criteria: Only name and metadata/);
  });

  it("a wrong key is 401, a missing permission 403, another project's eval 404", async () => {
    const created = await client.evals.create({
      data_source_config: custom,
      testing_criteria: [stringCheck],
    });
    const wrong = new OpenAI({ apiKey: 'eg_wrong', baseURL: `${h.url}/v1`, maxRetries: 0 });
    await expect(wrong.evals.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const readOnly = await h.key(['evaluation:read']);
    const reader = new OpenAI({ apiKey: readOnly.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    expect((await reader.evals.retrieve(created.id)).id).toBe(created.id);
    await expect(reader.evals.delete(created.id)).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    const outsider = await h.key(['*'], 'elsewhere');
    const other = new OpenAI({ apiKey: outsider.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    await expect(other.evals.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.evals.update(created.id, { name: 'x' })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.evals.delete(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.evals.runs.list(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await other.evals.list()).data.map((e) => e.id)).not.toContain(created.id);
  });
});
