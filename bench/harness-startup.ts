/**
 * `npm run bench:harness`: what the test suite pays to start the app, as test/helpers/harness.ts starts
 * it (createServices, createApp, the inline worker, a listening socket, the contract checker, an admin
 * key) and closes it. Prints one JSON document: for each database, the CPU seconds (this process:
 * user + system) and wall time of loading the modules once, then of each of `--starts` starts and closes
 * (median and range), and the resident memory after them.
 *
 *   npm run bench:harness                              # SQLite and PostgreSQL, 5 starts each
 *   npm run bench:harness -- --db sqlite --starts 9
 *
 * Loading runs through tsx here; under vitest each test file loads the modules again through vite-node,
 * which costs more (see docs/performance.md), so the figure per start is the part the harness controls.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { arg } from './lib.js';

const starts = Number(arg('starts', '5'));
const dbs = arg('db', 'sqlite,postgres').split(',');

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

function summary(values: number[]): { median: number; min: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const round = (v: number) => Math.round(v * 1000) / 1000;
  return {
    median: round(sorted[Math.floor(sorted.length / 2)]!),
    min: round(sorted[0]!),
    max: round(sorted.at(-1)!),
  };
}

async function main() {
  const c0 = cpu();
  const t0 = performance.now();
  const { startHarness } = await import('../test/helpers/harness.js');
  const load = { cpu_s: Math.round((cpu() - c0) * 1000) / 1000, wall_s: (performance.now() - t0) / 1000 };
  const results: Record<string, unknown> = {};
  for (const db of dbs) {
    process.env.EVALGATE_TEST_DB = db;
    const runs: { start_cpu_s: number; start_wall_s: number; close_wall_s: number }[] = [];
    // One start first that is not counted: its database's template is made then (once per test run).
    await (await startHarness()).close();
    for (let i = 0; i < starts; i++) {
      const c1 = cpu();
      const t1 = performance.now();
      const h = await startHarness();
      const res = await h.call('GET', '/healthz');
      if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
      const c2 = cpu();
      const t2 = performance.now();
      await h.close();
      runs.push({
        start_cpu_s: c2 - c1,
        start_wall_s: (t2 - t1) / 1000,
        close_wall_s: (performance.now() - t2) / 1000,
      });
    }
    results[db] = {
      start_cpu_s: summary(runs.map((r) => r.start_cpu_s)),
      start_wall_s: summary(runs.map((r) => r.start_wall_s)),
      close_wall_s: summary(runs.map((r) => r.close_wall_s)),
      rss_mb: Math.round(process.memoryUsage().rss / 1e5) / 10,
    };
  }
  console.log(
    JSON.stringify(
      {
        bench: 'harness-startup',
        node: process.version,
        cores: os.cpus().length,
        loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
        starts,
        load,
        ...results,
      },
      null,
      2,
    ),
  );
}

await main();
