/**
 * The mock upstream as a cluster of MOCK_WORKERS processes on one port (node:cluster), so that the mock
 * never limits a benchmark of several gateway processes. Prints `{"url": …}` once, as bench/mock-server.ts.
 */
import cluster from 'node:cluster';

if (cluster.isPrimary) {
  const count = Number(process.env.MOCK_WORKERS ?? 1);
  // The workers print their URL (the same shared port); only the first line matters to the caller.
  for (let i = 0; i < count; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    process.exit(0);
  });
} else {
  await import('./mock-server.js');
}
