import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/** Addresses that always reach this machine: loopback and the unspecified addresses. */
const ALWAYS_LOCAL: [network: string, prefix: number, family: 'ipv4' | 'ipv6'][] = [
  ['127.0.0.0', 8, 'ipv4'],
  ['0.0.0.0', 32, 'ipv4'],
  ['::1', 128, 'ipv6'],
  ['::', 128, 'ipv6'],
];

/**
 * Whether a connection to `ip` stays on this machine: loopback, `0.0.0.0`/`::`, or an address of one of
 * its network interfaces (read when asked: interfaces come and go). IPv4-mapped IPv6 counts as its IPv4.
 */
export function isLocalAddress(ip: string): boolean {
  const address = ip.replace(/^\[|\]$/g, '').split('%')[0]!;
  const family = isIP(address);
  if (family === 0) return false;
  const list = new BlockList();
  for (const [network, prefix, type] of ALWAYS_LOCAL) list.addSubnet(network, prefix, type);
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      const local = entry.address.split('%')[0]!;
      list.addAddress(local, entry.family === 'IPv6' ? 'ipv6' : 'ipv4');
    }
  }
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The ports this process's HTTP server listens on, so that nothing points the gateway at itself (a model
 * whose base URL is the server's own address calls itself until every upstream connection is taken).
 * The app fills it once it listens (port 0 is resolved only then) and empties it when it closes; in a
 * process that serves no HTTP (`evalgate worker`) it stays empty and matches nothing.
 *
 * A local address on one of these ports counts as this server whichever interface the server is bound
 * to: simple and on the safe side (another service on the same port of another local interface is refused
 * too). Loops that leave the machine (port mappings, proxies, replicas) are caught by the hop header.
 */
export class SelfAddresses {
  private readonly ports = new Set<number>();

  listening(port: number): void {
    if (port > 0) this.ports.add(port);
  }

  stopped(port: number): void {
    this.ports.delete(port);
  }

  /** Whether a connection to (ip, port) would reach this server. */
  isSelf(ip: string, port: number): boolean {
    return this.ports.has(port) && isLocalAddress(ip);
  }
}

/** The port a URL connects to: its own, or its scheme's default. */
export function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}
