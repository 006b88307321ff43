import OpenAI from 'openai';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';

export interface Gateway {
  h: Harness;
  mock: MockUpstream;
  /** The official client pointed at Evalgate (no client-side retries, so tests see every answer). */
  client(options?: { key?: string; headers?: Record<string, string> }): OpenAI;
  /** The task logs of a container (after the log writer flushed), oldest first. */
  logs(container: string): Promise<any[]>;
  close(): Promise<void>;
}

/** Evalgate with both frontier providers enabled and pointed at one mock upstream. */
export async function startGateway(env: Record<string, string> = {}): Promise<Gateway> {
  const mock = await startMockUpstream();
  const h = await startHarness({
    env: {
      OPENAI_API_KEY: 'sk-operator-openai',
      OPENAI_BASE_URL: mock.baseUrl,
      ANTHROPIC_API_KEY: 'sk-operator-anthropic',
      ANTHROPIC_BASE_URL: mock.baseUrl,
      EVALGATE_UPSTREAM_RETRY_BASE_MS: '5',
      EVALGATE_UPSTREAM_RETRY_MAX_MS: '20',
      ...env,
    },
  });
  return {
    h,
    mock,
    client(options = {}) {
      return new OpenAI({
        baseURL: `${h.url}/v1`,
        apiKey: options.key ?? h.admin.key,
        maxRetries: 0,
        ...(options.headers ? { defaultHeaders: options.headers } : {}),
      });
    },
    async logs(container) {
      await h.app.services.logWriter.flush();
      const res = await h.call('GET', `/v1/containers/${container}/logs?limit=100`);
      if (res.status !== 200) throw new Error(`logs of ${container}: ${res.status} ${res.text}`);
      return res.body.data;
    },
    async close() {
      await h.close();
      await mock.close();
    },
  };
}
