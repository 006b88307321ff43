import { createApp } from '../app.js';
import type { Config } from '../config.js';
import { createWorker, type Worker } from '../executor/worker.js';
import { createServices } from '../services.js';
import { isEvalgateMessage, type ToPrimary, type ToWorker, WORKER_INDEX_ENV } from './ipc.js';
import { processClusterLink } from './link.js';

/**
 * One server process of `evalgate serve --workers N`, forked by the primary: the same app as the single
 * process, with rate limits and key revocations shared through the primary, listening on the shared
 * port. It stops on the primary's `stop` message (or its own SIGTERM/SIGINT, as a terminal sends to the
 * whole group): the listener closes, requests and streams in flight finish, the task log is flushed.
 */
export async function runClusterWorker(config: Config): Promise<void> {
  let close: (() => Promise<void>) | null = null;
  let requested = false;
  let stopping = false;
  const stop = () => {
    requested = true;
    // A stop asked for while the worker still starts waits for the start (it serves nothing yet).
    if (!close) return;
    const closeNow = close;
    if (stopping) return;
    stopping = true;
    void closeNow().finally(() => process.exit(0));
  };
  // Installed first: a worker replaced just before the server stops gets the stop while it starts.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('message', (message: unknown) => {
    if (isEvalgateMessage<ToWorker>(message) && message.evalgate === 'stop') stop();
  });
  // Without its primary (killed with SIGKILL), a worker stops too rather than serve on alone.
  process.on('disconnect', stop);

  const services = await createServices(config, { cluster: processClusterLink() });
  const app = await createApp(services);
  await app.server.listen({ host: config.host, port: config.port });
  // One worker executes runs (the one with index 0, replaced with the same index when it dies): the
  // in-memory model limiter then bounds a model's concurrency for the whole server, as with one process.
  let executor: Worker | null = null;
  const index = Number(process.env[WORKER_INDEX_ENV] ?? '0');
  if (config.runs.executor === 'inline' && config.runs.serveExecutes && index === 0) {
    executor = await createWorker(services);
    await executor.start();
  }
  close = async () => {
    await app.close();
    await executor?.close();
    await services.close();
  };
  if (requested) {
    stop();
    return;
  }
  const address = app.server.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  process.send?.({ evalgate: 'listening', port } satisfies ToPrimary);
}
