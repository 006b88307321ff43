/**
 * The ids of the records a writer accepted and may not have written yet, answered without waiting.
 * A writer settles its records in the order it accepted them (a batch the database is away for is
 * held in front, a refused batch's parts are tried before anything newer), so the records it still
 * holds are the last `held` it accepted: ids older than that window are forgotten as it moves on.
 */
export class HeldIds {
  private readonly order: string[] = [];
  private head = 0;
  /** Id → how many of the window's records carry it (a record written again under its id). */
  private readonly count = new Map<string, number>();

  accepted(id: string): void {
    this.order.push(id);
    this.count.set(id, (this.count.get(id) ?? 0) + 1);
  }

  /** Whether a record with this id may still be held, the writer holding `held` records now. */
  holds(id: string, held: number): boolean {
    this.trim(held);
    return this.count.has(id);
  }

  /** Forgets every id but the last `held` accepted. */
  trim(held: number): void {
    const keep = Math.max(0, held);
    while (this.order.length - this.head > keep) {
      const id = this.order[this.head++]!;
      const n = (this.count.get(id) ?? 1) - 1;
      if (n > 0) this.count.set(id, n);
      else this.count.delete(id);
    }
    // The forgotten prefix is dropped once it is as long as what is kept.
    if (this.head > 1024 && this.head * 2 >= this.order.length) {
      this.order.splice(0, this.head);
      this.head = 0;
    }
  }
}
