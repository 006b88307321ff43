import type { Redis } from 'ioredis';
import { type AbortHandler, unwatchAbort, watchAbort } from '../shared/abort-watch.js';
import { openRedis } from '../shared/redis.js';
import type { ModelLimiter, ModelLimits, Permit } from './model-limiter.js';
import { LimiterClosedError, LocalModelLimiter } from './model-limiter-memory.js';

/**
 * The model limiter shared by every worker of a deployment through Redis. Locally each worker runs the
 * in-memory limiter (./model-limiter-memory.ts); Redis only moves what must be shared, so the common call
 * (no RPM/TPM) makes no Redis round trip.
 *
 * - Concurrency: a worker that used a model in the last IDLE_MS is a member of the sorted set
 *   `<prefix>:model:<model>:workers` (score = last seen, Redis clock), refreshed every `shareRefreshMs`;
 *   members older than 3 refreshes are dropped. With N members sorted by id, the one at rank r has a
 *   share of floor(C/N) + (r < C mod N ? 1 : 0) calls at once; the shares sum to exactly C, so with more
 *   workers than slots some get 0 and wait until a member leaves. Each refresh also reports the worker's
 *   calls in flight with the membership it saw (hash `:active`). After a membership change a worker above
 *   its new share lets its calls in flight finish, and the others hold back by that excess: a worker
 *   starts nothing new until every member has reported under the current membership, then may run its
 *   share less what the others run beyond theirs. A member's report bounds its calls from then on (it
 *   starts none above its share), so the calls in flight across workers never exceed C. A membership
 *   change holds new calls back for up to one refresh; a model's first acquire in a worker waits for its
 *   join and for the others' reports.
 * - 429 pauses: `pause` raises `<prefix>:model:<model>:paused_until` (never lowers it) and publishes
 *   `{model, until}` on `<prefix>:limiter`, which every limiter subscribes to (a second connection);
 *   each share refresh also reads the key, so a worker that missed the message catches up.
 * - RPM/TPM: when set, an acquire that got its local slot runs one GCRA script in Redis (keys `:rpm` and
 *   `:tpm`, Redis clock); `release(tokens)` charges TPM with one script call. The local limiter applies
 *   the same limits to this worker's calls alone (never stricter than the shared budget), which is what
 *   remains when Redis fails.
 * - Redis failures: a failed call falls back to the local decision, never hangs (command timeout, no
 *   offline queue) and is reported through `warn` at most every 10 s. A worker that cannot refresh its
 *   membership for 3 refreshes uses the whole concurrency locally.
 */

export interface RedisModelLimiterOptions {
  url: string;
  /** Unique per worker process; orders the shares. */
  workerId: string;
  prefix?: string;
  /** How often membership and pauses are refreshed (default 1000 ms); the same on every worker. */
  shareRefreshMs?: number;
  warn?: (msg: string) => void;
}

const WINDOW_MS = 60_000;
/** A model unused this long leaves the membership, giving its share back. */
const IDLE_MS = 10_000;
const WARN_EVERY_MS = 10_000;

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: workers, paused_until, active. ARGV: worker id, stale ms, calls in flight.
 * Returns {paused_until, members (sorted), each member's report "<in flight>|<members it saw>" or nil}.
 */
const SHARE = `${NOW}
local stale = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - stale)
redis.call('PEXPIRE', KEYS[1], stale * 10)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(members)
local live = {}
for _, m in ipairs(members) do live[m] = true end
for _, f in ipairs(redis.call('HKEYS', KEYS[3])) do
  if not live[f] then redis.call('HDEL', KEYS[3], f) end
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3] .. '|' .. table.concat(members, ','))
redis.call('PEXPIRE', KEYS[3], stale * 10)
return {redis.call('GET', KEYS[2]) or '0', members, redis.call('HMGET', KEYS[3], unpack(members))}`;

/** KEYS: rpm, tpm. ARGV: rpm interval ms (0: none), 1 to check TPM debt. Returns ms to wait (0: charged). */
const RATE = `${NOW}
local wait = 0
if ARGV[2] == '1' then wait = tonumber(redis.call('GET', KEYS[2]) or '0') - ${WINDOW_MS} - now end
local interval = tonumber(ARGV[1])
if interval == 0 then return math.max(0, math.ceil(wait)) end
local tat = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0')) + interval
wait = math.max(wait, tat - ${WINDOW_MS} - now)
if wait > 0 then return math.ceil(wait) end
redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1)
return 0`;

/** KEYS: tpm. ARGV: ms of budget the tokens used. Debt allowed: the arrival time may run past the window. */
const CHARGE = `${NOW}
local tat = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0')) + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1)
return 0`;

/** KEYS: paused_until. ARGV: until (Unix ms), ms, channel, message. Extends only; publishes when it did. */
const PAUSE = `local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) <= cur then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`;

interface LimiterCommands {
  egShare(
    workers: string,
    paused: string,
    active: string,
    workerId: string,
    staleMs: number,
    inFlight: number,
  ): Promise<[string, string[], (string | null)[]]>;
  egRate(rpm: string, tpm: string, interval: string, checkTpm: number): Promise<number>;
  egCharge(tpm: string, ms: string): Promise<number>;
  egPause(paused: string, until: number, ms: number, channel: string, message: string): Promise<number>;
}
type CommandClient = Redis & LimiterCommands;

/** This worker's membership for one model. */
interface Share {
  joined: boolean;
  joining: Promise<void> | null;
  seenUses: number;
  lastUsed: number;
  /** Last successful refresh (Unix ms), 0 before any. */
  lastOk: number;
}

/** Waits `ms`, or rejects with the reason of whichever signal aborts first. */
function delay(ms: number, signal: AbortSignal, closing: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    if (closing.aborted) return reject(closing.reason);
    const done = () => {
      clearTimeout(timer);
      unwatchAbort(signal, handler);
      unwatchAbort(closing, handler);
    };
    const handler: AbortHandler = {
      onAbort(reason) {
        done();
        reject(reason);
      },
    };
    const timer = setTimeout(() => {
      done();
      resolve();
    }, ms);
    watchAbort(signal, handler);
    watchAbort(closing, handler);
  });
}

/**
 * The calls in flight each member reported (by rank), or null when one of them has not reported since the
 * membership became `seen` (its report names another membership, or it has none yet).
 */
export function othersInFlight(seen: string, reports: (string | null)[]): number[] | null {
  const inFlight: number[] = [];
  for (const report of reports) {
    const bar = report === null ? -1 : report.indexOf('|');
    if (report === null || bar < 0 || report.slice(bar + 1) !== seen) return null;
    inFlight.push(Number(report.slice(0, bar)) || 0);
  }
  return inFlight;
}

class RedisModelLimiter implements ModelLimiter {
  private readonly core = new LocalModelLimiter();
  private readonly shares = new Map<string, Share>();
  private readonly closing = new AbortController();
  private readonly refreshMs: number;
  private readonly channel: string;
  private readonly timer: NodeJS.Timeout;
  private refreshing = false;
  private lastWarn = 0;

  constructor(
    private readonly redis: CommandClient,
    private readonly sub: Redis,
    private readonly options: RedisModelLimiterOptions & { prefix: string },
  ) {
    this.refreshMs = options.shareRefreshMs ?? 1000;
    this.channel = `${options.prefix}:limiter`;
    sub.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.onPauseMessage(message);
    });
    this.timer = setInterval(() => void this.refresh(), this.refreshMs);
    this.timer.unref();
  }

  private key(model: string, part: string): string {
    return `${this.options.prefix}:model:${model}:${part}`;
  }

  acquire(model: string, limits: ModelLimits, signal: AbortSignal): Promise<Permit> {
    const share = this.shares.get(model);
    if (share === undefined || !share.joined) return this.joinThenAcquire(model, limits, signal);
    if (limits.rpm === null && limits.tpm === null) return this.core.acquire(model, limits, signal);
    return this.acquireRated(model, limits, signal);
  }

  private async joinThenAcquire(model: string, limits: ModelLimits, signal: AbortSignal): Promise<Permit> {
    if (this.closing.signal.aborted) throw new LimiterClosedError();
    let share = this.shares.get(model);
    if (share === undefined) {
      share = { joined: false, joining: null, seenUses: 0, lastUsed: Date.now(), lastOk: 0 };
      this.shares.set(model, share);
    }
    share.joining ??= this.join(model, share);
    await share.joining;
    if (!share.joined) throw new LimiterClosedError();
    return this.acquire(model, limits, signal);
  }

  private async join(model: string, share: Share): Promise<void> {
    await this.refreshModel(model, share, Date.now());
    share.joining = null;
    share.lastUsed = Date.now();
    share.joined = !this.closing.signal.aborted;
  }

  /** Local slot first (concurrency share, pause, this worker's RPM/TPM), then the shared RPM/TPM budget. */
  private async acquireRated(model: string, limits: ModelLimits, signal: AbortSignal): Promise<Permit> {
    const permit = await this.core.acquire(model, limits, signal);
    const tpmKey = this.key(model, 'tpm');
    const interval = limits.rpm === null ? '0' : String(WINDOW_MS / limits.rpm);
    try {
      for (;;) {
        const paused = this.core.pausedFor(model);
        if (paused > 0) {
          await delay(paused, signal, this.closing.signal);
          continue;
        }
        let wait: number;
        try {
          wait = Number(
            await this.redis.egRate(this.key(model, 'rpm'), tpmKey, interval, limits.tpm !== null ? 1 : 0),
          );
        } catch (err) {
          this.fail(err);
          break;
        }
        if (!(wait > 0)) break;
        await delay(wait, signal, this.closing.signal);
      }
    } catch (err) {
      permit.release(0);
      throw err;
    }
    const tpm = limits.tpm;
    if (tpm === null) return permit;
    return {
      release: (tokens: number) => {
        permit.release(tokens);
        if (tokens > 0) {
          this.redis.egCharge(tpmKey, String((tokens * WINDOW_MS) / tpm)).catch((err) => this.fail(err));
        }
      },
    };
  }

  async pause(model: string, ms: number): Promise<void> {
    const until = Date.now() + ms;
    this.core.pauseUntil(model, until);
    const message = JSON.stringify({ model, until });
    try {
      await this.redis.egPause(this.key(model, 'paused_until'), until, Math.ceil(ms), this.channel, message);
    } catch (err) {
      this.fail(err);
    }
  }

  pausedFor(model: string): number {
    return this.core.pausedFor(model);
  }

  private onPauseMessage(message: string): void {
    try {
      const { model, until } = JSON.parse(message) as { model?: unknown; until?: unknown };
      if (typeof model === 'string' && typeof until === 'number') this.core.pauseUntil(model, until);
    } catch {
      // Not ours to judge: a malformed message changes nothing.
    }
  }

  /** Heartbeat of the models in use, their shares and pauses; models idle for IDLE_MS leave. */
  private async refresh(): Promise<void> {
    if (this.refreshing || this.closing.signal.aborted) return;
    this.refreshing = true;
    try {
      const now = Date.now();
      const jobs: Promise<void>[] = [];
      for (const [model, share] of this.shares) {
        if (!share.joined) continue;
        const s = this.core.state(model);
        if (s.uses !== share.seenUses || s.active > 0 || s.head !== null) {
          share.seenUses = s.uses;
          share.lastUsed = now;
        }
        jobs.push(now - share.lastUsed > IDLE_MS ? this.leave(model) : this.refreshModel(model, share, now));
      }
      await Promise.all(jobs);
    } finally {
      this.refreshing = false;
    }
  }

  private async refreshModel(model: string, share: Share, now: number): Promise<void> {
    const s = this.core.state(model);
    try {
      const [paused, members, reports] = await this.redis.egShare(
        this.key(model, 'workers'),
        this.key(model, 'paused_until'),
        this.key(model, 'active'),
        this.options.workerId,
        3 * this.refreshMs,
        s.active,
      );
      const rank = members.indexOf(this.options.workerId);
      s.members = members.length;
      s.rank = rank < 0 ? members.length : rank;
      s.others = othersInFlight(members.join(','), reports);
      this.core.pauseUntil(model, Number(paused));
      share.lastOk = now;
    } catch (err) {
      this.fail(err);
      // Others have dropped this worker by now: it runs on its own until Redis answers again.
      if (now - share.lastOk > 3 * this.refreshMs) s.members = 0;
    }
    // The share may have grown.
    this.core.pump(s);
  }

  private async leave(model: string): Promise<void> {
    this.shares.delete(model);
    this.core.state(model).members = 0;
    try {
      await this.redis.zrem(this.key(model, 'workers'), this.options.workerId);
      await this.redis.hdel(this.key(model, 'active'), this.options.workerId);
    } catch (err) {
      this.fail(err);
    }
  }

  private fail(err: unknown): void {
    const now = Date.now();
    if (!this.options.warn || now - this.lastWarn < WARN_EVERY_MS) return;
    this.lastWarn = now;
    const reason = err instanceof Error ? err.message : String(err);
    this.options.warn(`Model limiter: a Redis call failed (${reason}); using local limits`);
  }

  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort(new LimiterClosedError());
    clearInterval(this.timer);
    await this.core.close();
    const models = [...this.shares.keys()];
    this.shares.clear();
    await Promise.all(models.map((model) => this.leave(model)));
    await this.sub.unsubscribe().catch(() => {});
    await Promise.all([this.redis, this.sub].map((r) => r.quit().catch(() => r.disconnect())));
  }
}

export async function createRedisModelLimiter(options: RedisModelLimiterOptions): Promise<ModelLimiter> {
  const redis = openRedis(options.url, 'command');
  const sub = openRedis(options.url, 'subscriber');
  const prefix = options.prefix ?? 'evalgate';
  try {
    await Promise.all([redis.connect(), sub.connect()]);
    await sub.subscribe(`${prefix}:limiter`);
  } catch (err) {
    redis.disconnect();
    sub.disconnect();
    throw err;
  }
  redis.defineCommand('egShare', { numberOfKeys: 3, lua: SHARE });
  redis.defineCommand('egRate', { numberOfKeys: 2, lua: RATE });
  redis.defineCommand('egCharge', { numberOfKeys: 1, lua: CHARGE });
  redis.defineCommand('egPause', { numberOfKeys: 1, lua: PAUSE });
  return new RedisModelLimiter(redis as CommandClient, sub, { ...options, prefix });
}
