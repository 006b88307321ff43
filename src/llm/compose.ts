import type { Config } from '../config.js';
import { isAddressAllowed } from './egress/policy.js';
import type { SelfAddresses } from './egress/self-addresses.js';
import type { ModelContext } from './models/resolve.js';
import { resolveModel } from './models/resolve.js';
import { createProviderLayer, type ProviderLayer } from './provider-layer.js';
import { createUpstream } from './upstream.js';

/** What keeps the gateway from calling itself: its own listening ports, and its deployment's hop id. */
export interface LoopGuard {
  self: SelfAddresses;
  hopId: string;
}

/** The provider layer as the service runs it: pools from config, the upstream policy, registry fallbacks. */
export function createProviders(config: Config, models: ModelContext, loop: LoopGuard): ProviderLayer {
  const { upstream } = config;
  return createProviderLayer({
    upstream: createUpstream(
      upstream,
      (ip, port, host) => isAddressAllowed(ip, config.upstreamPolicy, { host, port }),
      loop.self,
    ),
    policy: { retries: upstream.retries, baseMs: upstream.retryBaseMs, maxMs: upstream.retryMaxMs },
    resolveModel: (projectId, ref) => resolveModel(models, projectId, ref),
    hopId: loop.hopId,
  });
}
