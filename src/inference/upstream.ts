import dns from 'node:dns';
import net from 'node:net';
import { buildConnector, Pool } from 'undici';
import type { UpstreamConfig } from '../config.js';
import { dispatchCall, type UpstreamResponse, type UpstreamSend } from './upstream-call.js';

/** The upstream's address is refused by the upstream safety policy (checked when connecting). */
export class AddressBlockedError extends Error {
  override name = 'AddressBlockedError';
  readonly code = 'EVALGATE_ADDRESS_BLOCKED';
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`The upstream ${host} resolves to ${address}, which the upstream safety policy refuses`);
  }
}

/** Where to send one kind of call: the pool of the origin and the request path. */
export interface UpstreamTarget {
  readonly origin: string;
  readonly path: string;
  readonly pool: Pool;
}

export interface UpstreamStats {
  pools: number;
  connected: number;
  running: number;
  pending: number;
}

/** Connection pools to upstream model providers, one per origin (and address policy). */
export interface Upstream {
  target(baseUrl: string, path: string, checkAddress: boolean): UpstreamTarget;
  send(target: UpstreamTarget, call: UpstreamSend): Promise<UpstreamResponse>;
  stats(): UpstreamStats;
  close(): Promise<void>;
}

/** Decides whether a resolved IP address may be connected to. */
export type AddressCheck = (ip: string) => boolean;

/** A DNS lookup that only ever hands allowed addresses to the socket, so DNS cannot bypass the policy. */
function checkedLookup(allowed: AddressCheck): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const ok = addresses.filter((a) => allowed(a.address));
      const first = ok[0];
      if (!first) return callback(new AddressBlockedError(hostname, addresses[0]?.address ?? '?'), '', 0);
      if (options.all) callback(null, ok);
      else callback(null, first.address, first.family);
    });
  };
}

function connector(config: UpstreamConfig, allowed: AddressCheck | null): buildConnector.connector {
  if (!allowed) return buildConnector({ timeout: config.connectTimeoutMs });
  const connect = buildConnector({ timeout: config.connectTimeoutMs, lookup: checkedLookup(allowed) });
  return (options, callback) => {
    // IP literals never reach the lookup function: check them here.
    const host = options.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host) && !allowed(host)) return callback(new AddressBlockedError(host, host), null);
    return connect(options, callback);
  };
}

/**
 * One undici Pool per upstream origin: keep-alive, a bounded number of connections, and the connect,
 * headers and body timeouts from config. Pools of registered (customer) upstreams check every
 * resolved address against the safety policy; frontier providers' pools do not need to.
 */
export function createUpstream(config: UpstreamConfig, addressCheck: AddressCheck | null): Upstream {
  const pools = new Map<string, Pool>();
  const targets = new Map<string, UpstreamTarget>();

  function poolFor(origin: string, checked: boolean): Pool {
    const key = `${checked ? 'checked' : 'plain'} ${origin}`;
    let pool = pools.get(key);
    if (!pool) {
      pool = new Pool(origin, {
        connections: config.connections,
        pipelining: 1,
        keepAliveTimeout: config.keepAliveMs,
        keepAliveMaxTimeout: config.keepAliveMs,
        headersTimeout: config.headersTimeoutMs,
        bodyTimeout: config.bodyTimeoutMs,
        connect: connector(config, checked ? addressCheck : null),
      });
      pools.set(key, pool);
    }
    return pool;
  }

  return {
    target(baseUrl, path, checkAddress) {
      const key = `${checkAddress ? 1 : 0}${baseUrl}${path}`;
      let target = targets.get(key);
      if (!target) {
        const url = new URL(baseUrl.replace(/\/+$/, '') + path);
        const checked = checkAddress && addressCheck !== null;
        target = { origin: url.origin, path: url.pathname + url.search, pool: poolFor(url.origin, checked) };
        targets.set(key, target);
      }
      return target;
    },
    send(target, call) {
      return dispatchCall(target.pool, target.path, call);
    },
    stats() {
      const out: UpstreamStats = { pools: pools.size, connected: 0, running: 0, pending: 0 };
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
      await Promise.all(all.map((pool) => pool.close().catch(() => pool.destroy())));
    },
  };
}
