import { randomBytes } from 'node:crypto';
import { median } from './method.js';

const round2 = (n: number) => Math.round(n * 100) / 100;

/** p50, p95 and max of a list of times (ms). */
export function percentiles(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number) => round2(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
  return { p50: at(50), p95: at(95), max: round2(s.at(-1)!) };
}

/** Median, range and the rounds of a per-round figure. */
export const summary = (xs: number[]) => ({
  median: round2(median(xs)),
  range: [round2(Math.min(...xs)), round2(Math.max(...xs))],
  rounds: xs.map(round2),
});

/** A PostgreSQL database of the bench's own (`evalgate_bench_<what>_…`), dropped afterwards. */
export async function postgresDatabase(
  adminUrl: string,
  what: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const { default: pg } = await import('pg');
  const name = `evalgate_bench_${what}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * A timer of GET requests to `origin` (ms to the end of the body); a non-200 answer throws. A keep-alive
 * connection the server closed meanwhile (during a long seeding) fails once: the request is sent again.
 */
export function timedGet(origin: string, headers: Record<string, string>) {
  return async (route: string): Promise<number> => {
    const t = performance.now();
    const res = await fetch(origin + route, { headers }).catch(() => fetch(origin + route, { headers }));
    if (res.status !== 200) throw new Error(`${route}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    return performance.now() - t;
  };
}

/**
 * The reads' figures against their targets: one item's lookup (p95 ≤ 50 ms) and the filtered lists
 * (each list's p95 ≤ 200 ms), from the lookup times and each list's percentiles.
 */
export function readFigures(lookups: number[], lists: Record<string, ReturnType<typeof percentiles>>) {
  const lookup = percentiles(lookups);
  const worstList = Math.max(...Object.values(lists).map((l) => l.p95));
  return {
    lookup: { ...lookup, target: 'p95 <= 50', meets_target: lookup.p95 <= 50 },
    list: { ...lists, target: 'p95 <= 200', meets_target: worstList <= 200 },
  };
}
