import { parentPort } from 'node:worker_threads';
import { lowerThisThread } from '../../shared/thread-nice.js';
import { computeAgreement } from './compute.js';
import type { ThreadReply, ThreadRequest } from './threads.js';

/**
 * A statistics thread (started by threads.ts): computes one job at a time and answers with the figures.
 * Nothing here touches the database or the network: it receives plain pairs and returns plain figures.
 */

lowerThisThread();
const port = parentPort;
if (!port) throw new Error('the agreement statistics thread must be started as a worker thread');
port.on('message', (request: ThreadRequest) => {
  let reply: ThreadReply;
  try {
    reply = { figures: computeAgreement(request.job) };
  } catch (err) {
    reply = { error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
