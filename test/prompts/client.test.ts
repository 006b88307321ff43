import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Evalgate, PromptVariableError } from '../../src/client/index.js';
import { clientOf } from '../client/helpers.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { type Harness, startHarness } from '../helpers/harness.js';

/* The TypeScript client: prompt resources, the cached fetch (TTL, last version when the server is gone), local compile. */

interface Vector {
  name: string;
  messages: { role: string; content: string }[];
  variables: Record<string, 'string' | 'number' | 'boolean' | 'json'>;
  values: Record<string, unknown>;
  expected?: { role: string; content: string }[];
  errors?: { variable: string; kind: string }[];
}
const vectors: Vector[] = JSON.parse(
  readFileSync(new URL('../fixtures/prompt-template-vectors.json', import.meta.url), 'utf8'),
).cases;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('compile: the shared template vectors', () => {
  it.each(vectors.map((v) => [v.name, v] as const))('%s', async (_, v) => {
    const { FetchedPrompt } = await import('../../src/client/index.js');
    const fetched = new FetchedPrompt({
      version: { messages: v.messages, variables: v.variables, version: 1 },
    } as never);
    if (v.expected) {
      expect(fetched.compile(v.values)).toEqual(v.expected);
      return;
    }
    let caught: unknown;
    try {
      fetched.compile(v.values);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PromptVariableError);
    expect(
      (caught as PromptVariableError).problems.map((p) => ({ variable: p.variable, kind: p.kind })),
    ).toEqual(v.errors);
  });
});

describe('the cached fetch', () => {
  let h: Harness;
  let client: Evalgate;
  beforeAll(async () => {
    h = await startHarness();
    client = clientOf(h, { maxRetries: 0 });
    await client.prompts.create({
      name: 'faq',
      messages: [{ role: 'user', content: 'Answer {{q}} in {{n}} words' }],
      variables: { n: 'number' },
      labels: ['production'],
    });
    await client.prompts.createVersion('faq', {
      messages: [{ role: 'user', content: 'V2: {{q}} ({{n}})' }],
      variables: { n: 'number' },
    });
  });
  afterAll(async () => {
    await h?.close().catch(() => {});
  });

  it('manages versions and labels through the resources', async () => {
    const versions = [];
    for await (const v of client.prompts.listVersions('faq')) versions.push(v.version);
    expect(versions).toEqual([2, 1]);
    const diff = await client.prompts.diff('faq', 1, 2);
    expect(diff.messages[0]!.status).toBe('changed');
    expect((await client.prompts.get('faq', { label: 'production' })).version.version).toBe(1);
    expect((await client.prompts.getVersion('faq', 2)).labels).toEqual(['latest']);
    await expect(client.prompts.get('faq', { label: 'missing' })).rejects.toMatchObject({ status: 404 });
  });

  it('sees a label move after the TTL, and compiles the last version fetched once the server is gone', async () => {
    const first = await client.prompts.getPrompt('faq', { label: 'production', ttl: 0.4 });
    expect(first.version).toBe(1);
    expect(first.compile({ q: 'why', n: 5 })).toEqual([{ role: 'user', content: 'Answer why in 5 words' }]);
    expect(() => first.compile({ q: 'why', n: 'five' })).toThrow(PromptVariableError);

    await client.prompts.moveLabel('faq', 'production', 2);
    // Within the TTL: the cached version.
    expect((await client.prompts.getPrompt('faq', { label: 'production', ttl: 0.4 })).version).toBe(1);
    await sleep(450);
    const moved = await client.prompts.getPrompt('faq', { label: 'production', ttl: 0.4 });
    expect(moved.version).toBe(2);
    expect(moved.stale).toBe(false);

    await h.close();
    await sleep(450);
    const offline = await client.prompts.getPrompt('faq', { label: 'production', ttl: 0.4 });
    expect(offline.stale).toBe(true);
    expect(offline.version).toBe(2);
    expect(offline.compile({ q: 'how', n: 3 })).toEqual([{ role: 'user', content: 'V2: how (3)' }]);
    // Never fetched: nothing to fall back on.
    await expect(client.prompts.getPrompt('other', { ttl: 0 })).rejects.toMatchObject({
      code: 'connection_error',
    });
  });
});

describe('a call made with the compiled prompt', () => {
  let g: Gateway;
  beforeAll(async () => {
    g = await startGateway();
  });
  afterAll(async () => {
    await g.close();
  });

  it('carries the version to the task log through X-Evalgate-Prompt-Compiled', async () => {
    const client = clientOf(g.h);
    const created = await client.prompts.create({
      name: 'local',
      messages: [{ role: 'system', content: 'Be {{tone}}.' }],
    });
    const fetched = await client.prompts.getPrompt('local');
    const { response } = await g
      .client()
      .chat.completions.create(
        {
          model: 'openai/gpt-4o-mini',
          messages: [...(fetched.compile({ tone: 'brief' }) as never[]), { role: 'user', content: 'Hi' }],
        },
        { headers: fetched.headers },
      )
      .withResponse();
    const logs = await g.logs('default');
    const log = logs.find((l) => l.id === response.headers.get('x-evalgate-log-id'));
    expect(log.prompt_id).toBe(created.id);
    expect(log.prompt_version).toBe(1);
    expect(g.mock.requests[0]!.body.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });

    // A version the project does not have is refused before any model call.
    const err = await g
      .client()
      .chat.completions.create(
        { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] },
        { headers: { 'X-Evalgate-Prompt-Compiled': `${created.id}@9` } },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(g.mock.requests).toHaveLength(1);
  });
});
