import { describe, expect, it } from 'vitest';
import { writersOf, writesOf } from '../helpers/table-writers.js';

// A scan of the source tree: no database, so it runs once, in the SQLite project.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')(
  'capture is the only writer of what was recorded',
  () => {
    it('writes task_logs only under src/capture/', () => {
      const writers = writersOf('task_logs');
      expect(writers.filter((file) => !file.startsWith('src/capture/'))).toEqual([]);
      // The store itself is found, so the scan sees the way the room writes.
      expect(writers).toContain('src/capture/task-log-store.ts');
    });

    it('writes spans only under src/capture/', () => {
      const writers = writersOf('spans');
      expect(writers.filter((file) => !file.startsWith('src/capture/'))).toEqual([]);
      expect(writers).toEqual(
        expect.arrayContaining(['src/capture/trace-store.ts', 'src/capture/trace-retention.ts']),
      );
    });

    it('recognises each way of writing the tables, so the scans above can fail', () => {
      const writes = [
        ["db.updateTable('task_logs').set({ metadata })", 'task_logs'],
        ['trx.insertInto("spans").values(rows)', 'spans'],
        ["db.deleteFrom('task_logs')", 'task_logs'],
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a tagged template, scanned
        ['sql`update task_logs set output = ${o}`', 'task_logs'],
        ['DELETE FROM "spans" WHERE 1', 'spans'],
        ["await insertRows(trx, 'task_logs', rows, 500, insert)", 'task_logs'],
        ["spans: await pruneTable(db, 'spans', cutoff, batch)", 'spans'],
      ] as const;
      for (const [text, table] of writes)
        expect(
          writesOf(table).some((p) => p.test(text)),
          text,
        ).toBe(true);
      const reads = [
        ["db.selectFrom('task_logs')", 'task_logs'],
        ["db.updateTable('task_log_counters')", 'task_logs'],
        ['update spans_summary set n = 1', 'spans'],
        ["db.insertInto('span_log_events')", 'spans'],
      ] as const;
      for (const [text, table] of reads)
        expect(
          writesOf(table).some((p) => p.test(text)),
          text,
        ).toBe(false);
    });
  },
);
