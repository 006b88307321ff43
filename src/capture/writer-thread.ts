/**
 * The log writer's thread: its own database connection and the ordinary batching writer, so that
 * serialising, assembling streamed answers and inserting rows never run on the request path.
 * Messages in: `records`, `flush`, `close`; out: `started`, `progress`, `flushed`, `closed`, `fatal`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../db/database.js';
import { lowerThisThread } from '../shared/thread-nice.js';
import type { ThreadReply, ThreadRequest, ThreadWorkerData } from './thread-protocol.js';
import type { TaskLogRecord } from './types.js';
import { createLogWriter } from './writer.js';

const port = parentPort;
if (!port) throw new Error('writer-thread.js runs as a worker thread');
const { databaseUrl, options, reportCommitted } = workerData as ThreadWorkerData;
const reply = (message: ThreadReply) => port.postMessage(message);

// Recording is background work: on Linux this thread yields the cores to request handling (its id goes to
// the owner, which changes its scheduling class).
reply({ type: 'started', tid: lowerThisThread() });

try {
  const database = await openDatabase(databaseUrl);
  let reported = { written: 0, failed: 0 };
  const progress = () => {
    const { written, failed } = writer.stats();
    if (written === reported.written && failed === reported.failed) return;
    reported = { written, failed };
    reply({ type: 'progress', written, failed });
  };
  const writer = createLogWriter(database.db, {
    ...options,
    onProgress: progress,
    // Records are dropped on the owner's side (it keeps the bound), so it reports outages.
    outage: {
      down: (reason) => reply({ type: 'availability', available: false, reason }),
      up: () => reply({ type: 'availability', available: true, reason: '' }),
    },
    warn: (message) => reply({ type: 'warn', message }),
    onCommitted: reportCommitted ? (logs) => reply({ type: 'committed', logs }) : undefined,
  });
  port.on('message', (message: ThreadRequest) => {
    switch (message.type) {
      case 'records':
        for (const record of JSON.parse(message.json) as TaskLogRecord[]) writer.write(record);
        // Records refused at once (unserialisable) count as failed without waiting for a batch.
        progress();
        return;
      case 'flush':
        void writer.flush().then(() => {
          progress();
          reply({ type: 'flushed', id: message.id });
        });
        return;
      case 'close':
        void writer
          .close()
          .then(() => {
            progress();
            return database.close();
          })
          .catch(() => {})
          .finally(() => {
            reply({ type: 'closed' });
            port.close();
          });
        return;
    }
  });
} catch (err) {
  reply({ type: 'fatal', message: err instanceof Error ? err.message : String(err) });
  port.close();
}
