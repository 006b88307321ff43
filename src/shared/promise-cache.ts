/**
 * Promises kept by key, each made once: the answer of the first `get` is shared by every caller until it
 * settles and after. A promise that rejects is forgotten, so the next `get` of its key tries again.
 */
export class PromiseCache<K, V> {
  private readonly entries = new Map<K, Promise<V>>();

  get(key: K, make: (key: K) => Promise<V>): Promise<V> {
    let found = this.entries.get(key);
    if (!found) {
      const made = make(key);
      found = made;
      made.catch(() => {
        if (this.entries.get(key) === made) this.entries.delete(key);
      });
      this.entries.set(key, made);
    }
    return found;
  }

  /** The promise of `key` if one was made and not forgotten. */
  peek(key: K): Promise<V> | undefined {
    return this.entries.get(key);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  keys(): K[] {
    return [...this.entries.keys()];
  }

  clear(): void {
    this.entries.clear();
  }
}
