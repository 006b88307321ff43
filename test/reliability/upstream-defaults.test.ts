import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopbackHost, loadConfig } from '../../src/config.js';
import { checkUpstreamUrl } from '../../src/llm/egress/policy.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { unusedPort } from '../helpers/ports.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';

/** `evalgate serve` on `host`, its first key read from the banner. */
async function serve(db: FreshDatabase, host: string, env: Record<string, string> = {}) {
  const port = await unusedPort();
  const proc = await startEvalgate(
    ['serve', '--host', host, '--port', String(port)],
    {
      EVALGATE_DATA_DIR: db.dataDir,
      EVALGATE_DATABASE_URL: db.url,
      EVALGATE_KEY_PEPPER: 'test-pepper-0123456789abcdef',
      ...env,
    },
    /Evalgate listening/,
  );
  const key = /\n\s+(eg[_-]\S+)/.exec(proc.output())?.[1] ?? '';
  return { proc, key, url: `http://127.0.0.1:${port}` };
}

async function register(url: string, key: string, label: string, baseUrl: string) {
  const res = await fetch(`${url}/v1/models`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ label, base_url: baseUrl }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('private upstreams on a server that listens beyond loopback', () => {
  let mock: MockUpstream;
  /** The first project's key, printed by the first `serve` on the fresh database. */
  let key = '';
  const mockPort = () => Number(new URL(mock.url).port);
  let db: FreshDatabase;
  const procs: EvalgateProcess[] = [];
  beforeAll(async () => {
    mock = await startMockUpstream();
    db = await freshDatabase();
  });
  afterAll(async () => {
    for (const p of procs) await p.stop();
    await mock.close();
    await db.drop();
  });

  it('refuses a loopback upstream by default, and accepts it once EVALGATE_ALLOWED_UPSTREAM_HOSTS names it', async () => {
    const open = await serve(db, '0.0.0.0');
    procs.push(open.proc);
    expect(open.key).not.toBe('');
    key = open.key;
    // Nothing in the banner says private upstreams are open: they are not.
    expect(open.proc.output()).not.toMatch(/may point at loopback/);
    const refused = await register(open.url, open.key, 'internal', mock.baseUrl);
    expect(refused.status).toBe(422);
    expect(refused.body.detail[0].loc).toEqual(['body', 'base_url']);
    expect(refused.body.detail[0].msg).toMatch(/loopback address, refused/);
    expect(refused.body.detail[0].msg).toMatch(/EVALGATE_ALLOWED_UPSTREAM_HOSTS/);
    const viaName = await register(open.url, open.key, 'internal-name', `http://localhost:${mockPort()}/v1`);
    expect(viaName.status).toBe(422);
    await open.proc.stop();

    // The operator opens exactly the mock's host:port.
    const named = await serve(db, '0.0.0.0', { EVALGATE_ALLOWED_UPSTREAM_HOSTS: `127.0.0.1:${mockPort()}` });
    procs.push(named.proc);
    expect(named.proc.output()).toContain(`Upstreams allowed: only 127.0.0.1:${mockPort()}`);
    expect(named.proc.output()).not.toMatch(/may point at loopback and private-network addresses/);
    const keyRes = await fetch(`${named.url}/v1/models`, {
      headers: { authorization: `Bearer ${open.key}` },
    });
    expect(keyRes.status).toBe(200);
    const accepted = await register(named.url, open.key, 'internal', mock.baseUrl);
    expect(accepted.status).toBe(201);
    const client = new OpenAI({ baseURL: `${named.url}/v1`, apiKey: open.key, maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model: 'internal',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(answer.choices[0]?.message.content).toBe('Hello from the mock upstream.');
    // Another loopback port is still closed.
    const other = await register(named.url, open.key, 'other-port', `http://127.0.0.1:${mockPort() + 1}/v1`);
    expect(other.status).toBe(422);
    await named.proc.stop();
  }, 120_000);

  it('keeps loopback open on the embedded default (127.0.0.1) and says so at start', async () => {
    const local = await serve(db, '127.0.0.1');
    procs.push(local.proc);
    expect(local.proc.output()).toMatch(/may point at loopback and private-network addresses/);
    const res = await fetch(`${local.url}/v1/models`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'ollama', base_url: 'http://127.0.0.1:11434/v1' }),
    });
    expect(res.status).toBe(201);
    await local.proc.stop();
  }, 60_000);
});

describe('the upstream policy settings', () => {
  it('blocks private upstreams by default exactly when the server listens beyond loopback', () => {
    const at = (host: string, extra: Record<string, string> = {}) =>
      loadConfig({ EVALGATE_DATA_DIR: '/tmp/evalgate-policy', EVALGATE_HOST: host, ...extra }).upstreamPolicy;
    expect(at('127.0.0.1').blockPrivate).toBe(false);
    expect(at('localhost').blockPrivate).toBe(false);
    expect(at('::1').blockPrivate).toBe(false);
    expect(at('0.0.0.0').blockPrivate).toBe(true);
    expect(at('10.1.2.3').blockPrivate).toBe(true);
    expect(at('::').blockPrivate).toBe(true);
    expect(at('0.0.0.0', { EVALGATE_BLOCK_PRIVATE_UPSTREAMS: '0' }).blockPrivate).toBe(false);
    expect(at('127.0.0.1', { EVALGATE_BLOCK_PRIVATE_UPSTREAMS: '1' }).blockPrivate).toBe(true);
    expect(isLoopbackHost('127.0.0.5')).toBe(true);
    expect(isLoopbackHost('192.168.1.1')).toBe(false);
  });

  it('re-opens what host, host:port, IP and CIDR entries name, and nothing else', () => {
    const policy = (allowed: string) => ({ blockPrivate: true, allowedHosts: allowed.split(',') });
    const ok = (url: string, allowed: string) => checkUpstreamUrl(url, policy(allowed)).ok;
    expect(ok('http://127.0.0.1:8000/v1', '127.0.0.1:8000')).toBe(true);
    expect(ok('http://127.0.0.1:8001/v1', '127.0.0.1:8000')).toBe(false);
    expect(ok('http://10.0.0.5:8000/v1', '10.0.0.0/8')).toBe(true);
    expect(ok('http://10.0.0.5:8000/v1', '10.0.0.0/24')).toBe(true);
    expect(ok('http://10.0.1.5:8000/v1', '10.0.0.0/24')).toBe(false);
    expect(ok('http://[::1]:8000/v1', '[::1]:8000')).toBe(true);
    expect(ok('http://[fd00::5]/v1', 'fd00::/8')).toBe(true);
    expect(ok('http://localhost:11434/v1', 'localhost:11434')).toBe(true);
    expect(ok('http://localhost:11435/v1', 'localhost:11434')).toBe(false);
    expect(ok('http://192.168.1.7/v1', '192.168.1.7')).toBe(true);
    // Metadata and link-local addresses are never re-opened.
    expect(ok('http://169.254.169.254/latest', '169.254.0.0/16')).toBe(false);
    expect(ok('http://169.254.169.254/latest', '169.254.169.254')).toBe(false);
    // Without blocking, the list still narrows which hosts may be used.
    expect(
      checkUpstreamUrl('http://8.8.8.8/v1', { blockPrivate: false, allowedHosts: ['127.0.0.1:1'] }).ok,
    ).toBe(false);
  });
});
