/**
 * Sums the self time of `.cpuprofile` files (as `npm run bench:gateway -- --cpu-prof <dir>` writes them)
 * by file and by function, over the samples taken from the gateway's first call on (the start-up's module
 * loading and schema compiling left out), idle samples left out. Prints the shares of the busy time.
 *
 *   npx tsx bench/gateway-profile.ts <dir>/CPU.*.cpuprofile [--top 30]
 *   npx tsx bench/gateway-profile.ts bench/out/CPU.*.cpuprofile --from engine/chunk   # a run's profile
 *
 * A profile without a gateway call (the log writer's thread) is summed whole.
 */
import fs from 'node:fs';
import type { CpuProfile } from './cpu-profile.js';
import { arg } from './lib.js';

const top = Number(arg('top', '30'));
/** The samples are summed from the first whose stack passes through a script whose URL has this in it. */
const fromUrl = arg('from', 'call-runner');
const files = process.argv
  .slice(2)
  .filter((a, i, all) => !a.startsWith('--') && !['--top', '--from'].includes(all[i - 1] ?? ''));

/** A short place for a script: the part from `dist/` or `node_modules/` on, else the URL. */
function place(url: string): string {
  const at = url.search(/\/(dist|node_modules)\//);
  return at === -1 ? url : url.slice(at + 1);
}

/** The package of a `node_modules/` place (scoped names kept whole), else the place. */
function unit(where: string): string {
  if (!where.startsWith('node_modules/')) return where;
  const parts = where.split('/');
  return parts.slice(0, parts[1]?.startsWith('@') ? 3 : 2).join('/');
}

function summarise(file: string): void {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const idle = new Set(
    profile.nodes.filter((n) => ['(idle)', '(program)'].includes(n.callFrame.functionName)).map((n) => n.id),
  );
  // Whether a sample's stack passes through the gateway's call runner (memoised per node).
  const inCall = new Map<number, boolean>();
  const calls = (id: number): boolean => {
    const known = inCall.get(id);
    if (known !== undefined) return known;
    const up = parent.get(id);
    const value = (byId.get(id)?.callFrame.url ?? '').includes(fromUrl) || (up !== undefined && calls(up));
    inCall.set(id, value);
    return value;
  };
  const first = profile.samples.findIndex((id) => calls(id));
  const from = first === -1 ? 0 : first;
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  for (let i = from; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    if (idle.has(id)) continue;
    const us = profile.timeDeltas[i] ?? 0;
    const frame = byId.get(id)!.callFrame;
    const where = place(frame.url);
    const fileKey = unit(where) || frame.functionName;
    const fnKey = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
    byFunction.set(fnKey, (byFunction.get(fnKey) ?? 0) + us);
    total += us;
  }
  const print = (title: string, sums: Map<string, number>) => {
    process.stdout.write(`-- ${title}\n`);
    for (const [key, us] of [...sums].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      process.stdout.write(`${((us / total) * 100).toFixed(1).padStart(5)} %  ${key}\n`);
    }
  };
  process.stdout.write(`== ${file}: ${(total / 1000).toFixed(0)} ms busy\n`);
  print('self time by file', byFile);
  print('self time by function', byFunction);
}

for (const file of files) summarise(file);
