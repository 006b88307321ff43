/**
 * Budget check benchmark: the CPU one gateway or run call spends on its budgets — `check` before the
 * upstream call and `charge` after it — measured in one process against a call with no budget step at all,
 * interleaved in rounds so that the machine's load falls on every variant alike. Prints one JSON document.
 *
 *   npm run bench:budgets                     # 5 rounds of 20,000 calls per variant (~20 s)
 *   npm run bench:budgets -- --calls 50000 --rounds 3 --redis redis://127.0.0.1:6379
 *
 * Variants: `none` (the payer's project has no budget: one cached look-up), `memory` (a key and a project
 * budget on the embedded mode's in-memory counter), and with `--redis`, `redis` (the scale-out counter: one
 * MGET per check, one INCRBYFLOAT per charge). The figure per variant is the median over rounds of
 * (CPU per call − the baseline's CPU per call), in microseconds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMemoryCounter, type SpendCounter } from '../src/budgets/counter.js';
import { Budgets } from '../src/budgets/service.js';
import { openDatabase } from '../src/db/database.js';
import type { Payer } from '../src/shared/budget.js';
import { ensureProject } from '../src/tenancy/projects.js';
import { arg } from './lib.js';

const calls = Number(arg('calls', '20000'));
const rounds = Number(arg('rounds', '5'));
const redisUrl = arg('redis', '');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-bench-budgets-'));
const database = await openDatabase(`sqlite:${path.join(dir, 'evalgate.db')}`);
await database.migrate();
const { db } = database;
const free = (await ensureProject(db, 'free')).id;
const capped = (await ensureProject(db, 'capped')).id;
const warn = (message: string) => process.stderr.write(`${message}\n`);

async function budgetsOn(counter: SpendCounter): Promise<Budgets> {
  const budgets = new Budgets({ db, counter, cacheMs: 60_000 });
  // Far above what the bench spends, so that every check passes and every charge is counted.
  await budgets.set(capped, 'project', capped, { limit_usd: 1e9, period: 'month' });
  await budgets.set(capped, 'key', 'key_bench', { limit_usd: 1e9, period: 'day' });
  return budgets;
}

const memory = await budgetsOn(createMemoryCounter({ db, warn }));
const variants: { name: string; budgets: Budgets | null; payer: Payer }[] = [
  { name: 'baseline', budgets: null, payer: { projectId: free, keyId: 'key_free' } },
  { name: 'none', budgets: memory, payer: { projectId: free, keyId: 'key_free' } },
  { name: 'memory', budgets: memory, payer: { projectId: capped, keyId: 'key_bench' } },
];
if (redisUrl) {
  const { createRedisCounter } = await import('../src/budgets/counter-redis.js');
  const prefix = `bench-budgets-${process.pid}`;
  variants.push({
    name: 'redis',
    budgets: await budgetsOn(await createRedisCounter({ db, warn, url: redisUrl, prefix })),
    payer: { projectId: capped, keyId: 'key_bench' },
  });
}

/** What a call does besides its budgets: an awaited step, so that the baseline has the same shape. */
const nothing = async (): Promise<void> => {};

async function measure(v: (typeof variants)[number]): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    if (v.budgets) {
      await v.budgets.check(v.payer);
      await v.budgets.charge(v.payer, 0.000094);
    } else {
      await nothing();
      await nothing();
    }
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / calls;
}

for (const v of variants) await measure(v); // warm-up: caches loaded, code optimised
const perRound: Record<string, number[]> = Object.fromEntries(variants.map((v) => [v.name, []]));
for (let r = 0; r < rounds; r++) {
  const base = await measure(variants[0]!);
  for (const v of variants.slice(1)) perRound[v.name]!.push((await measure(v)) - base);
  perRound.baseline!.push(base);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

process.stdout.write(
  `${JSON.stringify(
    {
      calls,
      rounds,
      baseline_cpu_us_per_call: round3(median(perRound.baseline!)),
      added_cpu_us_per_call: Object.fromEntries(
        variants.slice(1).map((v) => [v.name, round3(median(perRound[v.name]!))]),
      ),
      target_us: 5,
    },
    null,
    2,
  )}\n`,
);
for (const v of variants) await v.budgets?.close();
await database.close();
fs.rmSync(dir, { recursive: true, force: true });
process.exit(0);
