import dns from 'node:dns';
import net from 'node:net';
import type { buildConnector, Pool } from 'undici';
import type { UpstreamConfig } from '../config.js';
import { loadUndici, undici, undiciIfLoaded } from '../shared/undici-module.js';
import { portOf, type SelfAddresses } from './egress/self-addresses.js';
import { dispatchCall, type UpstreamResponse, type UpstreamSend } from './upstream-call.js';

/**
 * The upstream's address is refused when connecting: by the upstream safety policy, or because it is this
 * server itself (`selfPort`: a local address on a port the server listens on).
 */
export class AddressBlockedError extends Error {
  override name = 'AddressBlockedError';
  readonly code = 'EVALGATE_ADDRESS_BLOCKED';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly selfPort: number | null = null,
  ) {
    super(
      selfPort === null
        ? `The upstream ${host} resolves to ${address}, which the upstream safety policy refuses`
        : `The upstream ${host} resolves to ${address} port ${selfPort}, which is this Evalgate server itself; ` +
            'a model pointed at the gateway would call itself in a loop',
    );
  }
}

/** Every upstream socket stayed busy for the whole connect timeout (EVALGATE_UPSTREAM_MAX_CONNECTIONS). */
export class ConnectionLimitError extends Error {
  override name = 'ConnectionLimitError';
  readonly code = 'EVALGATE_UPSTREAM_CONNECTION_LIMIT';
  constructor(max: number, waitedMs: number) {
    super(`All ${max} upstream connections stayed in use for ${waitedMs} ms`);
  }
}

/**
 * Where to send one kind of call: the origin and the request path, and the pool of the origin once a
 * call made it (undici is loaded on the first call: src/shared/undici-module.ts).
 */
export interface UpstreamTarget {
  readonly origin: string;
  readonly path: string;
  pool: Pool | null;
}

export interface UpstreamStats {
  pools: number;
  connected: number;
  running: number;
  pending: number;
  /** Sockets open to upstreams across all pools (at most `maxConnections`). */
  open: number;
  /** Connects waiting for one of those sockets to close. */
  waiting: number;
}

/** Connection pools to upstream model providers, one per origin (and address policy). */
export interface Upstream {
  target(baseUrl: string, path: string, checkAddress: boolean): UpstreamTarget;
  send(target: UpstreamTarget, call: UpstreamSend): Promise<UpstreamResponse>;
  stats(): UpstreamStats;
  close(): Promise<void>;
}

/** Decides whether a resolved IP address may be connected to (`host`: as written in the URL). */
export type AddressCheck = (ip: string, port: number, host: string) => boolean;

/** Why a connection to a resolved address of `host` is refused (the error it fails with), or null. */
type Refusal = (host: string, ip: string) => AddressBlockedError | null;

/** A DNS lookup that only ever hands allowed addresses to the socket, so DNS cannot bypass the checks. */
function checkedLookup(refuse: Refusal): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      let refused: AddressBlockedError | null = null;
      const ok = addresses.filter((a) => {
        const why = refuse(hostname, a.address);
        refused ??= why;
        return why === null;
      });
      const first = ok[0];
      if (!first) return callback(refused ?? new AddressBlockedError(hostname, '?'), '', 0);
      if (options.all) callback(null, ok);
      else callback(null, first.address, first.family);
    });
  };
}

interface Waiter {
  granted(): void;
  refused(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The sockets open to upstreams across all pools, bounded: a connect past the bound waits (at most the
 * connect timeout) until one closes, so that many origins, or a loop, cannot open sockets without end.
 * Idle keep-alive sockets count too, until EVALGATE_UPSTREAM_KEEPALIVE_MS closes them.
 */
class SocketBudget {
  private open = 0;
  private readonly waiters = new Set<Waiter>();

  constructor(
    private readonly max: number,
    private readonly waitMs: number,
  ) {}

  /** `granted` once a socket may be opened (then `release()` exactly once), or `refused` after waitMs. */
  take(granted: () => void, refused: (err: Error) => void): void {
    if (this.open < this.max) {
      this.open++;
      granted();
      return;
    }
    const waiter: Waiter = {
      granted,
      refused,
      timer: setTimeout(() => {
        this.waiters.delete(waiter);
        refused(new ConnectionLimitError(this.max, this.waitMs));
      }, this.waitMs),
    };
    this.waiters.add(waiter);
  }

  /** A socket closed (or was never opened): its slot goes to the longest waiter. */
  release(): void {
    const next = this.waiters.values().next();
    if (next.done) {
      this.open--;
      return;
    }
    this.waiters.delete(next.value);
    clearTimeout(next.value.timer);
    next.value.granted();
  }

  stats(): { open: number; waiting: number } {
    return { open: this.open, waiting: this.waiters.size };
  }

  /** Shutting down: nobody waits any longer. */
  close(): void {
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.refused(new ConnectionLimitError(this.max, 0));
    }
    this.waiters.clear();
  }
}

function connector(
  config: UpstreamConfig,
  refuse: Refusal | null,
  budget: SocketBudget,
): buildConnector.connector {
  const connect = undici().buildConnector({
    timeout: config.connectTimeoutMs,
    ...(refuse ? { lookup: checkedLookup(refuse) } : {}),
  });
  return (options, callback) => {
    // IP literals never reach the lookup function: check them here.
    const host = options.hostname.replace(/^\[|\]$/g, '');
    const refused = refuse && net.isIP(host) ? refuse(host, host) : null;
    if (refused) return callback(refused, null);
    budget.take(
      () =>
        connect(options, (err, socket) => {
          if (err !== null) {
            budget.release();
            return callback(err, null);
          }
          if (socket.closed) budget.release();
          else socket.once('close', () => budget.release());
          callback(null, socket);
        }),
      (err) => callback(err, null),
    );
  };
}

/**
 * One undici Pool per upstream origin: keep-alive, a bounded number of connections, and the connect,
 * headers and body timeouts from config; the sockets of all pools together are bounded too
 * (`maxConnections`). Pools of registered (customer) upstreams check every resolved address against the
 * safety policy; frontier providers' pools do not need to. Every pool refuses to connect to this server
 * itself (`self`: a local address on a port it listens on), which would be a loop.
 */
export function createUpstream(
  config: UpstreamConfig,
  addressCheck: AddressCheck | null,
  self: SelfAddresses | null = null,
): Upstream {
  const pools = new Map<string, Pool>();
  const targets = new Map<string, UpstreamTarget>();
  const budget = new SocketBudget(config.maxConnections, config.connectTimeoutMs);

  function refusal(origin: URL, checked: boolean): Refusal | null {
    const allowed = checked ? addressCheck : null;
    if (!allowed && !self) return null;
    const port = portOf(origin);
    return (host, ip) => {
      if (self?.isSelf(ip, port)) return new AddressBlockedError(host, ip, port);
      if (allowed && !allowed(ip, port, host)) return new AddressBlockedError(host, ip);
      return null;
    };
  }

  function poolFor(url: URL, checked: boolean): Pool {
    const key = `${checked ? 'checked' : 'plain'} ${url.origin}`;
    let pool = pools.get(key);
    if (!pool) {
      pool = new (undici().Pool)(url.origin, {
        connections: config.connections,
        pipelining: 1,
        keepAliveTimeout: config.keepAliveMs,
        keepAliveMaxTimeout: config.keepAliveMs,
        headersTimeout: config.headersTimeoutMs,
        bodyTimeout: config.bodyTimeoutMs,
        connect: connector(config, refusal(url, checked), budget),
      });
      pools.set(key, pool);
    }
    return pool;
  }

  /** Where each target's pool is made: its origin, and whether its addresses are checked. */
  const origins = new WeakMap<UpstreamTarget, { url: URL; checked: boolean }>();

  function send(target: UpstreamTarget, call: UpstreamSend): Promise<UpstreamResponse> {
    if (!target.pool) {
      const { url, checked } = origins.get(target)!;
      target.pool = poolFor(url, checked);
    }
    return dispatchCall(target.pool, target.path, call);
  }

  return {
    target(baseUrl, path, checkAddress) {
      const key = `${checkAddress ? 1 : 0}${baseUrl}${path}`;
      let target = targets.get(key);
      if (!target) {
        const url = new URL(baseUrl.replace(/\/+$/, '') + path);
        const checked = checkAddress && addressCheck !== null;
        target = { origin: url.origin, path: url.pathname + url.search, pool: null };
        origins.set(target, { url, checked });
        targets.set(key, target);
      }
      return target;
    },
    send(target, call) {
      return undiciIfLoaded() ? send(target, call) : loadUndici().then(() => send(target, call));
    },
    stats() {
      const out: UpstreamStats = {
        pools: pools.size,
        connected: 0,
        running: 0,
        pending: 0,
        ...budget.stats(),
      };
      for (const pool of pools.values()) {
        out.connected += pool.stats.connected;
        out.running += pool.stats.running;
        out.pending += pool.stats.pending;
      }
      return out;
    },
    async close() {
      const all = [...pools.values()];
      pools.clear();
      targets.clear();
      budget.close();
      await Promise.all(all.map((pool) => pool.close().catch(() => pool.destroy())));
    },
  };
}
