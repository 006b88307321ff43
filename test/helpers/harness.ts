import { type App, createApp } from '../../src/app.js';
import { createKey } from '../../src/auth/key-store.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createWorker, type Worker } from '../../src/executor/worker.js';
import { createServices, type Services, type ServicesOptions } from '../../src/services.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { ContractChecker } from './contract.js';
import type { FreshDatabase } from './databases.js';
import { migratedDatabase } from './template-databases.js';

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  /** Sent as is (string or bytes) instead of JSON. */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Skip the OpenAPI check (for deliberately odd requests that the contract does not describe). */
  unchecked?: boolean;
}

export interface CallResult<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestKey {
  key: string;
  id: string;
  projectId: string;
}

export interface Harness {
  url: string;
  app: App;
  services: Services;
  /** The run executor of this process (null when the config leaves execution to other processes). */
  worker: Worker | null;
  config: Config;
  database: FreshDatabase;
  /** A key with every permission in the harness's main project. */
  admin: TestKey;
  call<T = any>(method: string, path: string, options?: CallOptions): Promise<CallResult<T>>;
  key(permissions?: string[], project?: string): Promise<TestKey>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  env?: Record<string, string>;
  /** Reuse an existing database (e.g. to share one between two app instances). */
  database?: FreshDatabase;
  /** The app's source and scorer kinds (default: the built-in ones). */
  kinds?: Pick<ServicesOptions, 'sourceKinds' | 'scorerKinds'>;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  // A database of its own, copied from one migrated once per test run (see template-databases.ts).
  const database = options.database ?? (await migratedDatabase());
  const config = loadConfig({
    EVALGATE_DATA_DIR: database.dataDir,
    EVALGATE_DATABASE_URL: database.url,
    EVALGATE_LOG_LEVEL: 'silent',
    EVALGATE_KEY_PEPPER: 'test-pepper-0123456789abcdef',
    ...options.env,
  });
  const services = await createServices(config, { ...options.kinds });
  const app = await createApp(services);
  // As `serve` does: in the inline mode the process executes runs itself.
  const worker =
    config.runs.executor === 'inline' && config.runs.serveExecutes ? await createWorker(services) : null;
  await worker?.start();
  await app.server.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  // The document and its checker are made on the first checked call (a test that never calls through
  // `call` does not pay for them).
  let contract: ContractChecker | null = null;
  const checker = () =>
    (contract ??= new ContractChecker(
      app.server.swagger() as ConstructorParameters<typeof ContractChecker>[0],
    ));

  async function key(permissions: string[] = ['*'], project = 'main'): Promise<TestKey> {
    const p = await ensureProject(app.services.db, project);
    const created = await createKey(app.services.db, app.services.pepper, {
      projectId: p.id,
      name: 'test',
      permissions,
    });
    return { key: created.key, id: created.view.id, projectId: p.id };
  }
  const admin = await key(['*']);

  async function call<T>(method: string, path: string, opts: CallOptions = {}): Promise<CallResult<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    const k = opts.key === undefined ? admin.key : opts.key;
    if (k !== null) headers.authorization = `Bearer ${k}`;
    let body: string | Uint8Array | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + path, { method, headers, body });
    const text = await res.text();
    const contentType = res.headers.get('content-type') ?? '';
    let parsed: unknown = text;
    // JSON (application/json, …+json), not JSON lines (application/jsonl), which stay text.
    const mediaType = contentType.split(';')[0]!.trim();
    if ((mediaType === 'application/json' || mediaType.endsWith('+json')) && text !== '')
      parsed = JSON.parse(text);
    if (!opts.unchecked) checker().check(method, path, res.status, parsed, contentType);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  return {
    url,
    app,
    services,
    worker,
    config,
    database,
    admin,
    call,
    key,
    async close() {
      await app.close();
      await worker?.close();
      await services.close();
      if (!options.database) await database.drop();
    },
  };
}

/**
 * Registers `label` as a model whose upstream is a closed loopback port: judges can name it (their
 * model must resolve at creation) in tests about the API rather than about execution.
 */
export async function registerStubModel(h: Harness, label = 'm', key?: string): Promise<string> {
  const res = await h.call('POST', '/v1/models', {
    key,
    body: { label, provider: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1', upstream_model: label },
  });
  if (res.status !== 201) throw new Error(`registering ${label}: ${res.status} ${res.text}`);
  return (res.body as { model_id: string }).model_id;
}
