import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

/** `http://host:port` for a host and port, IPv6 in brackets; a wildcard address becomes the loopback. */
export function listeningUrl(host: string, port: number): string {
  const name = WILDCARD_HOSTS.has(host) ? '127.0.0.1' : host;
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}`;
}

/**
 * Where users reach the dashboard: `EVALGATE_PUBLIC_URL`, or the address this server listens on. OpenID
 * Connect redirect URIs and the local sign-in link are built on it; https makes the cookies `Secure`.
 */
export function publicUrlOf(config: Config, server: Pick<FastifyInstance, 'addresses'>): string {
  if (config.dashboard.publicUrl) return config.dashboard.publicUrl;
  const address = server.addresses().find((a) => typeof a === 'object');
  return listeningUrl(config.host, address?.port ?? config.port);
}

function originOf(url: string | undefined): string | null {
  if (!url) return null;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/**
 * Whether a state-changing request comes from a page of the dashboard itself: its Origin (or, lacking
 * one, its Referer) is the public URL, or, when none is configured, the host the request was sent to.
 */
export function fromOwnOrigin(config: Config, request: FastifyRequest): boolean {
  const origin = originOf(request.headers.origin) ?? originOf(request.headers.referer);
  if (origin === null) return false;
  if (config.dashboard.publicUrl) return origin === config.dashboard.publicUrl;
  const host = request.headers.host;
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
}
