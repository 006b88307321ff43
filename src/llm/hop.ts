import { createHmac } from 'node:crypto';

/**
 * Every upstream request carries the ids of the Evalgate deployments it passed through, oldest first,
 * comma-separated. A gateway that finds its own id in a request it receives is being called by itself
 * (directly, or through a proxy, a port mapping or another Evalgate) and refuses it with 508.
 */
export const HOP_HEADER = 'x-evalgate-hop';

/** Ids kept from an incoming header: a longer chain is not a loop this deployment is part of anyway. */
const MAX_HOPS = 32;
const HOP_ID = /^[\w.-]{1,64}$/;

/**
 * This deployment's hop id: derived from the key pepper, so that every replica of one deployment has the
 * same id and another deployment (another pepper) has another; it reveals nothing about the pepper.
 */
export function hopIdOf(pepper: string): string {
  return createHmac('sha256', pepper).update('evalgate-hop').digest('hex').slice(0, 16);
}

/** The hop ids of an incoming request's header (repeated headers arrive joined with commas). */
export function hopsOf(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const text = Array.isArray(value) ? value.join(',') : value;
  const hops = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => HOP_ID.test(s));
  return hops.length > MAX_HOPS ? hops.slice(-MAX_HOPS) : hops;
}

/** The header value an upstream request carries: the hops it came through, then this deployment. */
export function hopHeader(incoming: readonly string[] | undefined, own: string): string {
  return incoming && incoming.length > 0 ? `${incoming.join(', ')}, ${own}` : own;
}
