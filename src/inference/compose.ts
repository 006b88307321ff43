import type { ModelContext } from '../catalog/models/resolve.js';
import { resolveModel } from '../catalog/models/resolve.js';
import { isAddressAllowed } from '../catalog/models/upstream-policy.js';
import type { Config } from '../config.js';
import { createProviderLayer, type ProviderLayer } from './provider-layer.js';
import { createUpstream } from './upstream.js';

/** The provider layer as the service runs it: pools from config, the upstream policy, registry fallbacks. */
export function createProviders(config: Config, models: ModelContext): ProviderLayer {
  const { upstream } = config;
  return createProviderLayer({
    upstream: createUpstream(upstream, (ip) => isAddressAllowed(ip, config.upstreamPolicy)),
    policy: { retries: upstream.retries, baseMs: upstream.retryBaseMs, maxMs: upstream.retryMaxMs },
    resolveModel: (projectId, ref) => resolveModel(models, projectId, ref),
  });
}
