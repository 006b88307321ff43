import type { Scorer } from '../scoring/types.js';

interface Entry {
  runId: string;
  scorer: Promise<Scorer>;
  users: number;
  idle: NodeJS.Timeout | null;
  /** The run ended: close as soon as the last chunk using it is done. */
  ending: boolean;
}

/**
 * The scorers of this process, one per (run, evaluator, launch): created by the first chunk that needs
 * one, shared by the chunks in flight, closed when no chunk has used it for `idleMs` or when the run ends.
 * A code scorer holds sandboxed Python workers, so every one created must be closed exactly once.
 */
export class ScorerPool {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly idleMs: number) {}

  /** Runs `work` with the scorer for `key`, creating it when needed. */
  async use<T>(
    runId: string,
    key: string,
    create: () => Promise<Scorer>,
    work: (scorer: Scorer) => Promise<T>,
  ): Promise<T> {
    let entry = this.entries.get(key);
    if (!entry) {
      const scorer = create();
      entry = { runId, scorer, users: 0, idle: null, ending: false };
      this.entries.set(key, entry);
      // A scorer that cannot be created is forgotten, so the next chunk tries again.
      scorer.catch(() => {
        if (this.entries.get(key)?.scorer === scorer) this.entries.delete(key);
      });
    }
    if (entry.idle) clearTimeout(entry.idle);
    entry.idle = null;
    entry.users++;
    try {
      return await work(await entry.scorer);
    } finally {
      entry.users--;
      if (entry.users === 0 && entry.ending) void this.drop(key, entry);
      else if (entry.users === 0 && this.entries.get(key) === entry) {
        entry.idle = setTimeout(() => void this.drop(key, entry), this.idleMs);
        entry.idle.unref();
      }
    }
  }

  private async drop(key: string, entry: Entry): Promise<void> {
    if (this.entries.get(key) !== entry || entry.users > 0) return;
    this.entries.delete(key);
    if (entry.idle) clearTimeout(entry.idle);
    const scorer = await entry.scorer.catch(() => null);
    await scorer?.close().catch(() => {});
  }

  /** Closes the run's scorers that no chunk is using now (the others close when their last chunk ends). */
  async endRun(runId: string): Promise<void> {
    const drops: Promise<void>[] = [];
    for (const [key, entry] of this.entries) {
      if (entry.runId !== runId) continue;
      entry.ending = true;
      if (entry.users === 0) drops.push(this.drop(key, entry));
    }
    await Promise.all(drops);
  }

  /** The number of scorers open (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(
      all.map(async (entry) => {
        if (entry.idle) clearTimeout(entry.idle);
        const scorer = await entry.scorer.catch(() => null);
        await scorer?.close().catch(() => {});
      }),
    );
  }
}
