import { parentPort } from 'node:worker_threads';
import type { MetricReply, MetricRequest } from './metric-pool.js';
import { similarity } from './text.js';

/** A metric pool's thread: computes one metric at a time, as the pool hands them over. */
const port = parentPort;
port?.on('message', (request: MetricRequest) => {
  let reply: MetricReply;
  try {
    reply = { id: request.id, value: similarity(request.metric, request.input, request.reference) };
  } catch (err) {
    reply = { id: request.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
