import type { Redis } from 'ioredis';
import type { GcraParams, RateDecision, RateLimiter } from './limiter.js';

/**
 * The same GCRA as ./limiter.ts, run atomically inside Redis so every replica shares one budget. The
 * clock is Redis's own (TIME), so replicas with skewed clocks still agree.
 * KEYS[1] = budget key; ARGV = interval ms, burst. Returns {allowed, remaining, reset ms, retry ms}.
 */
const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local window = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - window
if now < allow_at then
  return {0, 0, tostring(tat), tostring(allow_at - now)}
end
redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil(new_tat - now))
return {1, math.floor((now + window - new_tat) / interval), tostring(new_tat), '0'}
`;

type GcraCommand = (
  key: string,
  interval: number,
  burst: number,
) => Promise<[number, number, string, string]>;

export async function createRedisLimiter(
  url: string,
  params: GcraParams,
  prefix = 'evalgate:rl:',
): Promise<RateLimiter> {
  // Loaded lazily: the embedded mode never needs the Redis driver.
  const { Redis: RedisClient } = await import('ioredis');
  const redis: Redis = new RedisClient(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: true,
  });
  redis.on('error', () => {});
  await redis.connect();
  redis.defineCommand('evalgateGcra', { numberOfKeys: 1, lua: SCRIPT });
  const run = (redis as unknown as { evalgateGcra: GcraCommand }).evalgateGcra.bind(redis);
  const interval = params.periodMs / params.rate;
  return {
    async take(key): Promise<RateDecision> {
      const [allowed, remaining, resetMs, retryMs] = await run(prefix + key, interval, params.burst);
      return {
        allowed: allowed === 1,
        limit: params.burst,
        remaining: Math.max(0, Number(remaining)),
        resetAt: Math.ceil(Number(resetMs) / 1000),
        retryAfter: allowed === 1 ? 0 : Math.max(1, Math.ceil(Number(retryMs) / 1000)),
      };
    },
    async close() {
      redis.disconnect();
    },
  };
}
