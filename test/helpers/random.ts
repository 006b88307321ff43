/** A small seeded generator (mulberry32), so generated test inputs are the same on every run. */
export function seeded(seed: number) {
  let a = seed >>> 0;
  const random = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(random() * n);
  return {
    random,
    int,
    pick: <T>(items: readonly T[]): T => items[int(items.length)]!,
    chance: (p: number) => random() < p,
  };
}
