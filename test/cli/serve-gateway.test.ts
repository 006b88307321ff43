import { type ChildProcess, spawn } from 'node:child_process';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { cliArgs } from '../helpers/cli-bundle.js';
import { tempDir } from '../helpers/temp.js';
import { ROOT } from './cli-helpers.js';

/*
 * `evalgate serve` as the command runs (the bundle, not the sources): a registered model answers through
 * the gateway, plain and streamed. The bundle loads some packages only on first use (undici on the first
 * upstream call), in a form the sources under tsx never see.
 */
let mock: MockUpstream;
let child: ChildProcess | null = null;
let url = '';
let key = '';

beforeAll(async () => {
  if (process.env.EVALGATE_TEST_DB === 'postgres') return;
  mock = await startMockUpstream();
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
  const started = spawn(process.execPath, [...cliArgs(), 'serve', '--port', '0'], {
    cwd: ROOT,
    env: { ...env, EVALGATE_DATA_DIR: tempDir('evalgate-serve-gateway-').dir, EVALGATE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child = started;
  let stdout = '';
  started.stdout.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    started.stdout.on('data', (d: string) => {
      stdout += d;
      const listening = /listening on (http:\/\/[^\s/]+)/.exec(stdout)?.[1];
      const first = /^\s+(eg_\S+)\s*$/m.exec(stdout)?.[1];
      if (listening && first) {
        url = listening;
        key = first;
        resolve();
      }
    });
    started.once('exit', (code) => reject(new Error(`evalgate serve exited with ${code}: ${stdout}`)));
  });
}, 90_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await mock?.close();
});

// The command starts with the environment cleared: always on SQLite, so it runs once (the SQLite project).
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('the gateway of `evalgate serve`', () => {
  it('proxies a registered model plain and streamed', { timeout: 60_000 }, async () => {
    const registered = await fetch(`${url}/v1/models`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        label: 'served-mock',
        provider: 'openai-compatible',
        base_url: mock.baseUrl,
        upstream_model: 'mock',
      }),
    });
    expect(registered.status).toBe(201);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
    const plain = await client.chat.completions.create({
      model: 'served-mock',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(plain.choices[0]?.message.content).toBe('Hello from the mock upstream.');
    const stream = await client.chat.completions.create({
      model: 'served-mock',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello from the mock upstream.');
  });
});
