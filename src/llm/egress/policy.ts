import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { UpstreamPolicySettings } from '../../config.js';
import type { UpstreamVerdict } from '../models/types.js';
import { embeddedIpv4 } from './ipv6.js';
import { portOf, type SelfAddresses } from './self-addresses.js';

/**
 * Where registered models may send requests (and their credentials). Link-local and cloud-metadata
 * addresses are never allowed; loopback and private ranges are allowed (a self-hosted vLLM or Ollama is
 * the common case) unless the operator blocks them; an allow-list can narrow everything to named hosts.
 * The same rules run at registration (on the URL and on what its host name resolves to) and again on
 * the address actually connected to, so DNS cannot be used to get around them.
 */
export type UpstreamPolicy = UpstreamPolicySettings;

export type { UpstreamVerdict };

export type AddressClass = 'metadata' | 'link_local' | 'reserved' | 'loopback' | 'private' | 'public';

export type LookupFn = (host: string) => Promise<{ address: string; family: number }[]>;

const METADATA_HOSTS = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);

type Rule = [network: string, prefix: number];

const V4: Record<Exclude<AddressClass, 'public'>, Rule[]> = {
  // AWS/GCP/Azure/OpenStack (and AWS ECS task metadata) inside link-local; Alibaba on 100.100.100.200.
  metadata: [
    ['169.254.169.254', 32],
    ['169.254.170.2', 32],
    ['100.100.100.200', 32],
  ],
  link_local: [['169.254.0.0', 16]],
  reserved: [
    ['0.0.0.0', 8],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ],
  loopback: [['127.0.0.0', 8]],
  private: [
    ['10.0.0.0', 8],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
    ['100.64.0.0', 10],
    ['198.18.0.0', 15],
  ],
};

const V6: Record<Exclude<AddressClass, 'public'>, Rule[]> = {
  metadata: [['fd00:ec2::254', 128]],
  link_local: [['fe80::', 10]],
  reserved: [
    ['::', 128],
    ['ff00::', 8],
  ],
  loopback: [['::1', 128]],
  private: [['fc00::', 7]],
};

/** Checked in this order, so the most specific class names an address (e.g. ::1 is loopback). */
const ORDER = ['metadata', 'link_local', 'loopback', 'private', 'reserved'] as const;

function buildLists(): Map<(typeof ORDER)[number], BlockList> {
  const lists = new Map<(typeof ORDER)[number], BlockList>();
  for (const cls of ORDER) {
    const list = new BlockList();
    for (const [net, prefix] of V4[cls]) list.addSubnet(net, prefix, 'ipv4');
    for (const [net, prefix] of V6[cls]) list.addSubnet(net, prefix, 'ipv6');
    lists.set(cls, list);
  }
  return lists;
}

let lists: Map<(typeof ORDER)[number], BlockList> | null = null;

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function classOf(address: string, type: 'ipv4' | 'ipv6'): AddressClass {
  lists ??= buildLists();
  for (const cls of ORDER) if (lists.get(cls)!.check(address, type)) return cls;
  return 'public';
}

/** The class of an IP address; 'reserved' for text that is not one. */
export function classifyAddress(ip: string): AddressClass {
  const address = stripBrackets(ip).split('%')[0]!;
  const family = isIP(address);
  if (family === 0) return 'reserved';
  if (family === 4) return classOf(address, 'ipv4');
  const own = classOf(address, 'ipv6');
  if (own !== 'public') return own;
  // An IPv6 address that carries an IPv4 one reaches (or is translated to) that address: its class wins.
  const embedded = embeddedIpv4(address);
  return embedded === null ? own : classOf(embedded, 'ipv4');
}

const DESCRIBE: Record<Exclude<AddressClass, 'public'>, string> = {
  metadata: 'a cloud metadata address, which is never allowed',
  link_local: 'a link-local address (169.254.0.0/16, fe80::/10), which is never allowed',
  reserved: 'an unspecified, multicast or reserved address, which is never allowed',
  loopback:
    'a loopback address, refused because private upstreams are blocked (EVALGATE_BLOCK_PRIVATE_UPSTREAMS, on by default when the server listens beyond loopback); name it in EVALGATE_ALLOWED_UPSTREAM_HOSTS to open it',
  private:
    'a private-network address, refused because private upstreams are blocked (EVALGATE_BLOCK_PRIVATE_UPSTREAMS, on by default when the server listens beyond loopback); name it in EVALGATE_ALLOWED_UPSTREAM_HOSTS to open it',
};

/** Where a connection goes: the host name as written (or the IP) and the port. */
export interface UpstreamTarget {
  host: string;
  port: number;
}

/**
 * One entry of EVALGATE_ALLOWED_UPSTREAM_HOSTS: a host name (`*.example.com` wildcards), an IP literal,
 * either with `:port` (`[v6]:port` for IPv6), or a CIDR block (`10.0.0.0/8`, `fd00::/8`).
 */
interface AllowEntry {
  host: string | null;
  cidr: BlockList | null;
  port: number | null;
}

const parsedEntries = new WeakMap<readonly string[], AllowEntry[]>();

function parseEntry(raw: string): AllowEntry {
  const entry = raw.trim().toLowerCase();
  const slash = entry.indexOf('/');
  if (slash > 0) {
    const net = entry.slice(0, slash);
    const prefix = Number(entry.slice(slash + 1));
    const family = isIP(net);
    const list = new BlockList();
    if (family !== 0 && Number.isInteger(prefix)) {
      list.addSubnet(net, prefix, family === 4 ? 'ipv4' : 'ipv6');
      return { host: null, cidr: list, port: null };
    }
  }
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (v6) return { host: v6[1]!, cidr: null, port: v6[2] ? Number(v6[2]) : null };
  if (isIP(entry) === 6) return { host: entry, cidr: null, port: null };
  const hostPort = /^(.+):(\d+)$/.exec(entry);
  if (hostPort) return { host: hostPort[1]!, cidr: null, port: Number(hostPort[2]) };
  return { host: entry, cidr: null, port: null };
}

function entriesOf(allowed: readonly string[]): AllowEntry[] {
  let entries = parsedEntries.get(allowed);
  if (!entries) {
    entries = allowed.map(parseEntry);
    parsedEntries.set(allowed, entries);
  }
  return entries;
}

function matches(entry: AllowEntry, host: string, ip: string | null, port: number | null): boolean {
  if (entry.port !== null && port !== null && entry.port !== port) return false;
  if (entry.cidr) {
    const address = ip ?? (isIP(host) ? host : null);
    if (address === null) return false;
    const family = isIP(address);
    return family !== 0 && entry.cidr.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
  const name = entry.host ?? '';
  if (name.startsWith('*.')) return host.endsWith(name.slice(1));
  return host === name || (ip !== null && ip === name);
}

/** Whether the allow-list has CIDR entries (a host name's addresses are then checked once resolved). */
function namedByCidrOnly(policy: UpstreamPolicy): boolean {
  return policy.allowedHosts !== null && entriesOf(policy.allowedHosts).some((e) => e.cidr !== null);
}

/** Whether an allow-list entry names this target (host as written, or the address it resolved to). */
function named(policy: UpstreamPolicy, host: string, ip: string | null, port: number | null): boolean {
  if (!policy.allowedHosts) return false;
  return entriesOf(policy.allowedHosts).some((e) => matches(e, host, ip, port));
}

/**
 * The verdict on one address. `target` (the host as written and the port) lets an entry of
 * EVALGATE_ALLOWED_UPSTREAM_HOSTS re-open a loopback or private address it names; metadata, link-local
 * and reserved addresses are never re-opened.
 */
export function addressVerdict(ip: string, policy: UpstreamPolicy, target?: UpstreamTarget): UpstreamVerdict {
  const cls = classifyAddress(ip);
  if (cls === 'public') return { ok: true };
  if (cls === 'loopback' || cls === 'private') {
    if (!policy.blockPrivate) return { ok: true };
    const address = stripBrackets(ip);
    if (named(policy, target?.host ?? address, address, target?.port ?? null)) return { ok: true };
  }
  return { ok: false, reason: `${ip} is ${DESCRIBE[cls]}` };
}

/** For the connector: may a connection to this (resolved) address be opened? */
export function isAddressAllowed(ip: string, policy: UpstreamPolicy, target?: UpstreamTarget): boolean {
  return addressVerdict(ip, policy, target).ok;
}

function normalHost(url: URL): string {
  return stripBrackets(url.hostname.toLowerCase()).replace(/\.$/, '');
}

/** The rules that need no DNS: scheme, credentials, metadata names, IP literals, the allow-list. */
export function checkUpstreamUrl(url: string, policy: UpstreamPolicy): UpstreamVerdict {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'not a valid absolute URL' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return {
      ok: false,
      reason: `scheme '${parsed.protocol.slice(0, -1)}' is not allowed; use http or https`,
    };
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return { ok: false, reason: 'credentials in the URL are not allowed; send them as api_key' };
  }
  const host = normalHost(parsed);
  if (METADATA_HOSTS.has(host) || host.endsWith('.metadata.google.internal')) {
    return { ok: false, reason: `${host} is a cloud metadata host name, which is never allowed` };
  }
  const port = portOf(parsed);
  if (isIP(host)) {
    const verdict = addressVerdict(host, policy, { host, port });
    if (!verdict.ok) return verdict;
  } else if (
    policy.blockPrivate &&
    (host === 'localhost' || host.endsWith('.localhost')) &&
    !named(policy, host, null, port)
  ) {
    return { ok: false, reason: `${host} is ${DESCRIBE.loopback}` };
  }
  if (policy.allowedHosts && !named(policy, host, null, port) && !namedByCidrOnly(policy)) {
    return { ok: false, reason: `host ${host} is not in EVALGATE_ALLOWED_UPSTREAM_HOSTS` };
  }
  return { ok: true };
}

const systemLookup: LookupFn = (host) => dnsLookup(host, { all: true, verbatim: true });

/** The refusal of a base URL that reaches this server itself (host on this machine, port it listens on). */
function selfVerdict(
  host: string,
  port: number,
  address: string,
  self: SelfAddresses | null,
): UpstreamVerdict {
  if (!self?.isSelf(address, port)) return { ok: true };
  const where = host === address ? `${host}:${port}` : `${host}:${port} (${address})`;
  return {
    ok: false,
    reason: `${where} is this Evalgate server itself; a model pointed at the gateway would call itself in a loop`,
  };
}

/**
 * `checkUpstreamUrl`, then every address the host name resolves to. A name that does not resolve (yet)
 * passes: nothing can be reached through it, and the connect-time check still applies to it later.
 * With `self` (the ports this server listens on), an address of this machine on one of them is refused:
 * the gateway would call itself.
 */
export async function checkUpstreamUrlResolved(
  url: string,
  policy: UpstreamPolicy,
  lookup: LookupFn = systemLookup,
  self: SelfAddresses | null = null,
): Promise<UpstreamVerdict> {
  const first = checkUpstreamUrl(url, policy);
  if (!first.ok) return first;
  const parsed = new URL(url);
  const host = normalHost(parsed);
  const port = portOf(parsed);
  if (isIP(host)) return selfVerdict(host, port, host, self);
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host);
  } catch {
    return { ok: true };
  }
  for (const { address } of addresses) {
    const verdict = addressVerdict(address, policy, { host, port });
    if (!verdict.ok) return { ok: false, reason: `host ${host} resolves to ${verdict.reason}` };
    if (policy.allowedHosts && !named(policy, host, address, port)) {
      return { ok: false, reason: `host ${host} (${address}) is not in EVALGATE_ALLOWED_UPSTREAM_HOSTS` };
    }
    const loop = selfVerdict(host, port, address, self);
    if (!loop.ok) return loop;
  }
  return { ok: true };
}
