/**
 * The span store's thread (SQLite): its own connection to the database file, on which the span lane's
 * batches are inserted and added to their traces' summaries, so that this synchronous work never runs on
 * the event loop that serves the gateway. Messages in: `store`, `close`; out: `stored`, `failed`, `closed`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../db/database.js';
import { lowerThisThread } from '../shared/thread-nice.js';
import type { SpanStoreReply, SpanStoreRequest } from './span-store-protocol.js';
import { createSqlTraceStore } from './trace-store.js';

const port = parentPort;
if (!port) throw new Error('span-store-thread.js runs as a worker thread');
const { databaseUrl } = workerData as { databaseUrl: string };
const reply = (message: SpanStoreReply) => port.postMessage(message);
lowerThisThread();

const opened = openDatabase(databaseUrl);
const spans = opened.then((database) => createSqlTraceStore(database.db));
// A failed open answers every request with its error (the owner retries as it would a database outage).
spans.catch(() => {});
port.on('message', (message: SpanStoreRequest) => {
  if (message.type === 'close') {
    void opened
      .then((database) => database.close())
      .catch(() => {})
      .finally(() => {
        reply({ type: 'closed' });
        port.close();
      });
    return;
  }
  void (async () => {
    try {
      const fresh = new Set(await (await spans).store(message.spans));
      const indices: number[] = [];
      for (let i = 0; i < message.spans.length; i++) if (fresh.has(message.spans[i]!)) indices.push(i);
      reply({ type: 'stored', id: message.id, fresh: indices });
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      const code = (e as { code?: unknown }).code;
      reply({
        type: 'failed',
        id: message.id,
        message: e.message,
        code: typeof code === 'string' ? code : null,
      });
    }
  })();
});
