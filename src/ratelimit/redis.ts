import type { Redis } from 'ioredis';
import type { GcraParams, RateDecision, RateLimiter } from './limiter.js';
import { createMemoryLimiter } from './memory.js';

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

type GcraReply = [allowed: number, remaining: number, resetMs: string, retryMs: string];
type GcraCommand = (key: string, interval: number, burst: number) => Promise<GcraReply>;

/** A budget check that takes longer than this counts as Redis being unavailable. */
const COMMAND_TIMEOUT_MS = 1_000;
/** While Redis is away it is tried again at most this often (a hung server would cost every check the timeout). */
const RETRY_MS = 1_000;

export interface RedisLimiterOptions {
  /** Prefix of the budget keys (`<EVALGATE_REDIS_PREFIX>:rl:`). */
  prefix?: string;
  /**
   * While Redis cannot be reached: `open` (the default) keeps limiting with a budget in this process's
   * memory, so an outage of the limiter does not take the gateway down; `closed` refuses every request
   * (`take` throws, which the guard answers with 503).
   */
  onRedisError?: 'open' | 'closed';
  /** Told once when Redis becomes unreachable and once when it answers again. */
  warn?: (message: string) => void;
}

export async function createRedisLimiter(
  url: string,
  params: GcraParams,
  options: RedisLimiterOptions = {},
): Promise<RateLimiter> {
  const prefix = options.prefix ?? 'evalgate:rl:';
  const failOpen = (options.onRedisError ?? 'open') === 'open';
  const warn = options.warn ?? (() => {});
  // Loaded lazily: the embedded mode never needs the Redis driver.
  const { openRedis } = await import('../shared/redis.js');
  const redis: Redis = openRedis(url, 'command', COMMAND_TIMEOUT_MS);
  redis.defineCommand('evalgateGcra', { numberOfKeys: 1, lua: SCRIPT });
  const run = (redis as unknown as { evalgateGcra: GcraCommand }).evalgateGcra.bind(redis);
  const interval = params.periodMs / params.rate;
  const decisionOf = ([allowed, remaining, resetMs, retryMs]: GcraReply): RateDecision => ({
    allowed: allowed === 1,
    limit: params.burst,
    remaining: Math.max(0, Number(remaining)),
    resetAt: Math.ceil(Number(resetMs) / 1000),
    retryAfter: allowed === 1 ? 0 : Math.max(1, Math.ceil(Number(retryMs) / 1000)),
  });
  // Failing open still limits: each process with its own budget (N replicas let N times the rate through).
  const fallback = failOpen ? createMemoryLimiter(params) : null;
  let down = false;
  /** While Redis is away, one check a second tries it; the others do not wait on it. */
  let nextTry = 0;

  function unavailable(err: unknown): void {
    nextTry = Date.now() + RETRY_MS;
    if (down) return;
    down = true;
    const reason = err instanceof Error ? err.message : String(err);
    warn(
      failOpen
        ? `Redis is unavailable for rate limits (${reason}): each process limits API keys with its own budget until it returns (EVALGATE_RATE_LIMIT_ON_REDIS_ERROR=open)`
        : `Redis is unavailable for rate limits (${reason}): API requests are refused with 503 until it returns (EVALGATE_RATE_LIMIT_ON_REDIS_ERROR=closed)`,
    );
  }

  function available(): void {
    if (!down) return;
    down = false;
    warn('Redis answers again: rate limits are shared by every process again');
  }

  try {
    await redis.connect();
  } catch (err) {
    // Not fatal: ioredis keeps trying, and until it succeeds the limiter behaves as in any outage.
    unavailable(err);
  }

  return {
    async take(key): Promise<RateDecision> {
      if (!down || Date.now() >= nextTry) {
        try {
          const reply = await run(prefix + key, interval, params.burst);
          available();
          return decisionOf(reply);
        } catch (err) {
          unavailable(err);
        }
      }
      if (fallback) return fallback.take(key);
      throw new Error('Redis is unavailable for rate limits');
    },
    async ping() {
      await redis.ping();
    },
    async close() {
      await fallback?.close();
      redis.disconnect();
    },
  };
}
