import type { UpstreamConfig } from '../../src/config.js';
import type { ResolvedModel } from '../../src/llm/models/types.js';
import { type ChatStream, createProviderLayer, type ProviderLayer } from '../../src/llm/provider-layer.js';
import { type AddressCheck, createUpstream } from '../../src/llm/upstream.js';

export const UPSTREAM: UpstreamConfig = {
  connections: 16,
  maxConnections: 1024,
  connectTimeoutMs: 2_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  keepAliveMs: 10_000,
  retries: 2,
  retryBaseMs: 5,
  retryMaxMs: 20,
};

/** A ResolvedModel built by hand (what resolveModel would give) pointing at `baseUrl`. */
export function modelAt(baseUrl: string, overrides: Partial<ResolvedModel> = {}): ResolvedModel {
  return {
    slug: 'mock-gpt',
    modelId: null,
    provider: 'openai-compatible',
    api: 'chat',
    baseUrl,
    upstreamModel: 'mock-model',
    apiKey: 'sk-test',
    inputPricePerMtok: 2,
    outputPricePerMtok: 10,
    defaultParameters: {},
    fallbacks: [],
    checkAddress: false,
    limits: { rpm: null, tpm: null },
    ...overrides,
  };
}

export function layerFor(
  options: {
    retries?: number;
    addressCheck?: AddressCheck | null;
    resolve?: (slug: string) => ResolvedModel;
  } = {},
): ProviderLayer {
  const config = { ...UPSTREAM, retries: options.retries ?? UPSTREAM.retries };
  const { resolve } = options;
  return createProviderLayer({
    upstream: createUpstream(config, options.addressCheck ?? null),
    policy: { retries: config.retries, baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
    ...(resolve ? { resolveModel: async (_projectId: string, ref: string) => resolve(ref) } : {}),
  });
}

/**
 * Every frame of a stream (piped as the gateway pipes it), and the parsed chunk payloads (without [DONE]).
 * `slow`: the sink reports itself full after every write and drains a few milliseconds later.
 */
export async function drain(
  stream: ChatStream,
  options: { slow?: boolean } = {},
): Promise<{ text: string; chunks: any[]; done: boolean; waits: number }> {
  let text = '';
  let waits = 0;
  await stream.pipe({
    write: (frames) => {
      text += frames.toString();
      return !options.slow;
    },
    drained: async () => {
      waits++;
      await new Promise((r) => setTimeout(r, 3));
    },
    end: (frames) => {
      if (frames !== null) text += frames.toString();
    },
  });
  // Line ends may be CRLF (passed on as the upstream sent them): event streams allow both.
  const payloads = text
    .replace(/\r\n?/g, '\n')
    .split('\n\n')
    .filter((f) => f.startsWith('data: '))
    .map((f) => f.slice(6));
  return {
    text,
    chunks: payloads.filter((p) => p !== '[DONE]').map((p) => JSON.parse(p)),
    done: payloads.at(-1) === '[DONE]',
    waits,
  };
}
