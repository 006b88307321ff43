/**
 * Promises kept by key, at most `maxEntries` of them, the least recently used dropped first. A promise is
 * kept from the moment it is made, so concurrent callers of one key share one computation; one that
 * rejects is forgotten, so the next caller tries again.
 */
export class LruPromises<V> {
  private readonly entries = new Map<string, Promise<V>>();

  constructor(private readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string, make: () => Promise<V>): Promise<V> {
    const found = this.entries.get(key);
    if (found) {
      // Map keeps insertion order: taken out and put back, the entry becomes the most recent.
      this.entries.delete(key);
      this.entries.set(key, found);
      return found;
    }
    const made = make();
    this.entries.set(key, made);
    made.catch(() => {
      if (this.entries.get(key) === made) this.entries.delete(key);
    });
    while (this.entries.size > this.maxEntries) {
      this.entries.delete(this.entries.keys().next().value as string);
    }
    return made;
  }

  clear(): void {
    this.entries.clear();
  }
}
