import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey } from '../../src/auth/key-store.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { priceTable } from '../../src/llm/models/prices.js';
import { resolveModel } from '../../src/llm/models/resolve.js';
import { freshDatabase } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';

const OPERATOR_KEY = 'sk-operator-0123456789abcdef';
const SECRET = 'sk-live-SECRET-4f9a8b7c6d5e';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { OPENAI_API_KEY: OPERATOR_KEY } });
});
afterAll(async () => {
  await h.close();
});

const ctx = () => h.app.services.models;

async function register(body: Record<string, unknown>, key?: string) {
  return h.call('POST', '/v1/models', { body: { base_url: 'http://127.0.0.1:8000/v1', ...body }, key });
}

/** Every row of every table, as text. */
async function wholeDatabase(): Promise<string> {
  const db = h.app.services.db;
  const tables =
    h.app.services.database.capabilities.name === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)
      : await sql<{
          name: string;
        }>`select tablename as name from pg_tables where schemaname = 'public'`.execute(db);
  let dump = '';
  for (const { name } of tables.rows) {
    const rows = await sql`select * from ${sql.table(name)}`.execute(db);
    dump += JSON.stringify(rows.rows);
  }
  return dump;
}

describe('model registry', () => {
  it('registers, reads by label and id, patches and deletes a model', async () => {
    const created = await register({
      label: 'llama-local',
      upstream_model: 'meta-llama/Llama-3.1-8B-Instruct',
      api_key: SECRET,
      input_price_per_mtok: 0.1,
      output_price_per_mtok: 0.2,
      context_window: 8192,
      default_parameters: { temperature: 0.2, max_tokens: 256, system: 'Be brief.' },
      metadata: { owner: 'ml' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: 'llama-local',
      object: 'model',
      kind: 'registered',
      label: 'llama-local',
      owned_by: h.admin.projectId,
      provider: 'openai-compatible',
      base_url: 'http://127.0.0.1:8000/v1',
      upstream_model: 'meta-llama/Llama-3.1-8B-Instruct',
      has_api_key: true,
      api_key_last4: SECRET.slice(-4),
      input_price_per_mtok: 0.1,
      context_window: 8192,
      default_parameters: { temperature: 0.2, max_tokens: 256, system: 'Be brief.' },
      fallbacks: [],
      metadata: { owner: 'ml' },
    });
    expect(created.body.model_id).toMatch(/^mdl_/);
    expect(created.text).not.toContain(SECRET);

    const byId = await h.call('GET', `/v1/models/${created.body.model_id}`);
    expect(byId.body.id).toBe('llama-local');
    const patched = await h.call('PATCH', '/v1/models/llama-local', {
      body: { label: 'llama', api_key: null, context_window: null, fallbacks: ['openai/gpt-4o-mini'] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id: 'llama',
      has_api_key: false,
      api_key_last4: null,
      context_window: null,
      fallbacks: ['openai/gpt-4o-mini'],
    });
    expect((await h.call('GET', '/v1/models/llama')).body.model_id).toBe(created.body.model_id);

    expect((await h.call('DELETE', '/v1/models/llama')).status).toBe(404);
    const del = await h.call('DELETE', `/v1/models/${created.body.model_id}`);
    expect(del.body).toEqual({ object: 'model', id: created.body.model_id, deleted: true });
    expect((await h.call('GET', '/v1/models/llama')).status).toBe(404);
  });

  it('never stores the api_key in clear, and decrypts it only for the same row', async () => {
    const created = await register({ label: 'sealed', api_key: SECRET });
    const dump = await wholeDatabase();
    expect(dump).toContain(created.body.model_id);
    expect(dump).not.toContain(SECRET);
    expect(dump).not.toContain(Buffer.from(SECRET).toString('base64'));

    const resolved = await resolveModel(ctx(), h.admin.projectId, 'sealed');
    expect(resolved).toMatchObject({ apiKey: SECRET, modelId: created.body.model_id, checkAddress: true });

    // A ciphertext copied onto another row does not decrypt there.
    const other = await register({ label: 'copycat', api_key: 'sk-other-key-000000000' });
    const { api_key_encrypted } = await h.app.services.db
      .selectFrom('models')
      .select('api_key_encrypted')
      .where('id', '=', created.body.model_id)
      .executeTakeFirstOrThrow();
    await h.app.services.db
      .updateTable('models')
      .set({ api_key_encrypted })
      .where('id', '=', other.body.model_id)
      .execute();
    await expect(resolveModel(ctx(), h.admin.projectId, 'copycat')).rejects.toMatchObject({
      code: 'upstream_unavailable',
    });
  });

  it('generates the secret key into the data directory when EVALGATE_SECRET_KEY is unset', () => {
    const file = path.join(h.config.dataDir, 'secret-key');
    expect(fs.existsSync(file)).toBe(true);
    expect(h.app.services.secretKey).toHaveLength(32);
    expect(loadConfig({ EVALGATE_SECRET_KEY: 'ab'.repeat(32) }).secretKey).toHaveLength(32);
    expect(() => loadConfig({ EVALGATE_SECRET_KEY: 'too-short' })).toThrow(ConfigError);
  });

  it('asks for the credential again when base_url moves to another host', async () => {
    await register({ label: 'mover', api_key: SECRET });
    const moved = await h.call('PATCH', '/v1/models/mover', {
      body: { base_url: 'http://127.0.0.2:9000/v1' },
    });
    expect(moved.status).toBe(422);
    expect(moved.body.detail[0].loc).toEqual(['body', 'api_key']);
    const samePlace = await h.call('PATCH', '/v1/models/mover', {
      body: { base_url: 'http://127.0.0.1:8000/v2/' },
    });
    expect(samePlace.status).toBe(200);
    expect(samePlace.body).toMatchObject({ base_url: 'http://127.0.0.1:8000/v2', has_api_key: true });
    const withKey = await h.call('PATCH', '/v1/models/mover', {
      body: { base_url: 'http://127.0.0.2:9000/v1', api_key: 'sk-new-credential-1234' },
    });
    expect(withKey.body).toMatchObject({ has_api_key: true, api_key_last4: '1234' });
  });

  it('stores per-minute limits (null by default), patches them and gives them to resolution', async () => {
    const p = h.admin.projectId;
    const plain = await register({ label: 'unlimited' });
    expect(plain.body).toMatchObject({ requests_per_minute: null, tokens_per_minute: null });
    expect((await resolveModel(ctx(), p, 'unlimited')).limits).toEqual({ rpm: null, tpm: null });

    const limited = await register({
      label: 'limited',
      requests_per_minute: 600,
      tokens_per_minute: 10_000_000,
    });
    expect(limited.status).toBe(201);
    expect(limited.body).toMatchObject({ requests_per_minute: 600, tokens_per_minute: 10_000_000 });
    expect((await resolveModel(ctx(), p, 'limited')).limits).toEqual({ rpm: 600, tpm: 10_000_000 });

    const patched = await h.call('PATCH', '/v1/models/limited', {
      body: { requests_per_minute: null, tokens_per_minute: 5000 },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ requests_per_minute: null, tokens_per_minute: 5000 });
    await h.call('PATCH', '/v1/models/limited', { body: { context_window: 4096 } });
    const got = await h.call('GET', `/v1/models/${limited.body.model_id}`);
    expect(got.body).toMatchObject({
      requests_per_minute: null,
      tokens_per_minute: 5000,
      context_window: 4096,
    });
    expect((await resolveModel(ctx(), p, 'limited')).limits).toEqual({ rpm: null, tpm: 5000 });
    expect(
      (await h.call('PATCH', '/v1/models/limited', { body: { requests_per_minute: 1 } })).body,
    ).toMatchObject({ requests_per_minute: 1, tokens_per_minute: 5000 });

    for (const field of ['requests_per_minute', 'tokens_per_minute']) {
      for (const value of [0, -5, 2.5, 10_000_001, '100']) {
        const created = await register({ label: 'bad-limit', [field]: value });
        expect(created.status, `${field}=${value}`).toBe(422);
        expect(created.body.detail.map((d: any) => d.loc)).toContainEqual(['body', field]);
        const patch = await h.call('PATCH', '/v1/models/limited', { body: { [field]: value } });
        expect(patch.status, `${field}=${value}`).toBe(422);
        expect(patch.body.detail.map((d: any) => d.loc)).toContainEqual(['body', field]);
      }
    }
    expect((await h.call('GET', '/v1/models/bad-limit')).status).toBe(404);
  });

  it('checks fallbacks, labels and fields (422) and label clashes (409)', async () => {
    await register({ label: 'base' });
    const ok = await register({
      label: 'with-fallbacks',
      fallbacks: ['base', 'openai/gpt-4o', 'anthropic/claude-haiku-4-5'],
    });
    expect(ok.status).toBe(201);
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{ label: 'a/b' }, ['body', 'label']],
      [{ label: 'mdl_x' }, ['body', 'label']],
      [{ label: 'x', provider: 'cohere' }, ['body', 'provider']],
      [{ label: 'x', input_price_per_mtok: -1 }, ['body', 'input_price_per_mtok']],
      [{ label: 'x', default_parameters: { temperature: 3 } }, ['body', 'default_parameters', 'temperature']],
      [{ label: 'x', fallbacks: ['nope'] }, ['body', 'fallbacks', 0]],
      [{ label: 'x', fallbacks: ['base', 'mistral/large'] }, ['body', 'fallbacks', 1]],
      [{ label: 'x', fallbacks: ['x'] }, ['body', 'fallbacks', 0]],
      [{ label: 'x', secret: 1 }, ['body', 'secret']],
    ];
    for (const [body, loc] of cases) {
      const res = await register(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail.map((d: any) => d.loc)).toContainEqual(loc);
    }
    const missing = await h.call('POST', '/v1/models', { body: { label: 'x' } });
    expect(missing.body.detail[0].loc).toEqual(['body', 'base_url']);

    const clash = await register({ label: 'base' });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');
    const rename = await h.call('PATCH', '/v1/models/with-fallbacks', { body: { label: 'base' } });
    expect(rename.status).toBe(409);
    expect((await h.call('PATCH', '/v1/models/nope', { body: {} })).status).toBe(404);
  });
});

describe('GET /v1/models and resolution', () => {
  it('lists the bundled OpenAI models and the registered ones; the openai client parses it', async () => {
    await register({ label: 'listed-model', api_key: SECRET });
    const res = await h.call('GET', '/v1/models');
    expect(res.status).toBe(200);
    expect(res.body.object).toBe('list');
    const openai = priceTable().entries.filter((e) => e.provider === 'openai');
    const frontier = res.body.data.filter((m: any) => m.kind === 'frontier');
    expect(frontier.map((m: any) => m.id)).toEqual(openai.map((e) => `openai/${e.model}`));
    expect(res.body.data.some((m: any) => m.id.startsWith('anthropic/'))).toBe(false);
    const mini = frontier.find((m: any) => m.id === 'openai/gpt-4o-mini');
    expect(mini).toMatchObject({
      owned_by: 'openai',
      input_price_per_mtok: 0.15,
      output_price_per_mtok: 0.6,
      requests_per_minute: null,
      tokens_per_minute: null,
    });
    expect(mini.price_as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(mini.price_source).toMatch(/^https:\/\//);
    expect(res.text).not.toContain(SECRET);
    expect(res.text).not.toContain(OPERATOR_KEY);

    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: h.admin.key, maxRetries: 0 });
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      expect(model.object).toBe('model');
      expect(typeof model.created).toBe('number');
      expect(typeof model.owned_by).toBe('string');
      ids.push(model.id);
    }
    expect(ids).toEqual(expect.arrayContaining(['openai/gpt-4o-mini', 'openai/gpt-4.1', 'listed-model']));
    const one = await client.models.retrieve('openai/gpt-4o');
    expect(one).toMatchObject({ id: 'openai/gpt-4o', object: 'model', owned_by: 'openai' });
    expect((await client.models.retrieve('listed-model')).id).toBe('listed-model');
  });

  it('takes an operator price table, and refuses to start on a broken one', async () => {
    const file = path.join(h.config.dataDir, 'prices.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        models: [
          {
            provider: 'anthropic',
            model: 'claude-custom',
            input_usd_per_mtok: 1,
            output_usd_per_mtok: 2,
            as_of: '2026-01-01',
            source: 'contract #42',
          },
        ],
      }),
    );
    const custom = await startHarness({
      env: { ANTHROPIC_API_KEY: 'sk-ant-operator', EVALGATE_PRICES_FILE: file },
    });
    try {
      const list = await custom.call('GET', '/v1/models');
      expect(list.body.data.map((m: any) => [m.id, m.input_price_per_mtok, m.price_source])).toEqual([
        ['anthropic/claude-custom', 1, 'contract #42'],
      ]);
    } finally {
      await custom.close();
    }
    const broken = path.join(h.config.dataDir, 'broken-prices.json');
    fs.writeFileSync(broken, '{"models": [{"provider": "openai"}]}');
    const db = await freshDatabase();
    try {
      await expect(startHarness({ env: { EVALGATE_PRICES_FILE: broken }, database: db })).rejects.toThrow(
        /price table/,
      );
    } finally {
      await db.drop();
    }
  });

  it('answers 404 for frontier slugs of providers that are not enabled', async () => {
    const res = await h.call('GET', `/v1/models/${encodeURIComponent('anthropic/claude-haiku-4-5')}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('model_not_found');
    const unknownName = await h.call('GET', `/v1/models/${encodeURIComponent('openai/some-new-model')}`);
    expect(unknownName.body).toMatchObject({ id: 'openai/some-new-model', input_price_per_mtok: null });
  });

  it('resolves frontier slugs to the operator, registered models to their upstream', async () => {
    const p = h.admin.projectId;
    expect(await resolveModel(ctx(), p, 'openai/gpt-4o')).toEqual({
      slug: 'openai/gpt-4o',
      modelId: null,
      provider: 'openai-compatible',
      // OpenAI speaks the Responses API: Responses calls go to it natively.
      api: 'responses',
      baseUrl: 'https://api.openai.com/v1',
      upstreamModel: 'gpt-4o',
      apiKey: OPERATOR_KEY,
      inputPricePerMtok: 2.5,
      outputPricePerMtok: 10,
      defaultParameters: {},
      fallbacks: [],
      checkAddress: false,
      limits: { rpm: null, tpm: null },
    });
    expect(await resolveModel(ctx(), p, 'openai/gpt-4o-2024-08-06')).toMatchObject({
      inputPricePerMtok: 2.5,
    });
    expect(await resolveModel(ctx(), p, 'openai/brand-new')).toMatchObject({
      upstreamModel: 'brand-new',
      inputPricePerMtok: null,
      outputPricePerMtok: null,
    });
    await expect(resolveModel(ctx(), p, 'anthropic/claude-haiku-4-5')).rejects.toMatchObject({
      code: 'provider_not_configured',
      status: 400,
    });
    for (const ref of ['mistral/large', 'openai/', 'no-such-label', 'mdl_nope']) {
      await expect(resolveModel(ctx(), p, ref), ref).rejects.toMatchObject({
        code: 'model_not_found',
        status: 404,
      });
    }
    const reg = await register({
      label: 'claude-proxy',
      provider: 'anthropic',
      base_url: 'http://127.0.0.1:7000/v1/',
      upstream_model: 'claude-x',
      default_parameters: { max_tokens: 100 },
      fallbacks: ['openai/gpt-4o-mini'],
    });
    const byLabel = await resolveModel(ctx(), p, 'claude-proxy');
    expect(byLabel).toEqual({
      slug: 'claude-proxy',
      modelId: reg.body.model_id,
      provider: 'anthropic',
      api: 'chat',
      baseUrl: 'http://127.0.0.1:7000/v1',
      upstreamModel: 'claude-x',
      apiKey: null,
      inputPricePerMtok: null,
      outputPricePerMtok: null,
      defaultParameters: { max_tokens: 100 },
      fallbacks: ['openai/gpt-4o-mini'],
      checkAddress: true,
      limits: { rpm: null, tpm: null },
      cacheTtlSeconds: null,
    });
    expect((await resolveModel(ctx(), p, reg.body.model_id)).slug).toBe(reg.body.model_id);
    // Another project cannot use it.
    const other = await h.key(['*'], 'elsewhere');
    await expect(resolveModel(ctx(), other.projectId, 'claude-proxy')).rejects.toMatchObject({
      code: 'model_not_found',
    });
  });

  it('rejects missing, revoked and under-permitted keys, and hides other projects (404)', async () => {
    const mine = await register({ label: 'guarded' });
    const reader = await h.key(['models:read']);
    const revoked = await h.key(['*']);
    await revokeKey(h.app.services.db, revoked.id);
    h.app.services.auth.forget(revoked.id);
    const stranger = await h.key(['*'], 'strangers');
    const id = mine.body.model_id;
    const routes: [string, string, unknown?][] = [
      ['GET', '/v1/models'],
      ['GET', `/v1/models/${id}`],
      ['POST', '/v1/models', { label: 'n', base_url: 'http://127.0.0.1/v1' }],
      ['PATCH', `/v1/models/${id}`, { metadata: {} }],
      ['DELETE', `/v1/models/${id}`],
    ];
    for (const [method, url, body] of routes) {
      expect((await h.call(method, url, { key: null, body })).status, `${method} ${url}`).toBe(401);
      expect((await h.call(method, url, { key: revoked.key, body })).status).toBe(401);
      const limited = await h.call(method, url, { key: reader.key, body });
      expect(limited.status, `${method} ${url}`).toBe(method === 'GET' ? 200 : 403);
    }
    for (const [method, url, body] of routes.filter(([, u]) => u.includes(id))) {
      expect((await h.call(method, url, { key: stranger.key, body })).status, `${method} ${url}`).toBe(404);
    }
    const theirs = await h.call('GET', '/v1/models', { key: stranger.key });
    expect(theirs.body.data.some((m: any) => m.kind === 'registered')).toBe(false);
  });
});
