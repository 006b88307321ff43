import type { FastifyReply } from 'fastify';
import type { PlaygroundEvent } from './answer.js';
import { executeRun, type PlaygroundPorts, type PreparedRun } from './service.js';

/**
 * A prepared run answered as server-sent events: `start` (the run, its models and the order of their
 * columns), then `delta`, `answer` and `scores` events each tagged with its model's `index`, and `done`
 * with every answer. The client going away cancels the calls still running.
 */
export async function streamRun(
  ports: PlaygroundPorts,
  run: PreparedRun,
  reply: FastifyReply,
): Promise<void> {
  const headers: Record<string, string | number | string[]> = {};
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v;
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const send = (event: string, data: unknown) => {
    if (!res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  send('start', {
    id: run.id,
    models: run.models.map((m, index) => ({ index, model: m.ref })),
    evaluators: run.evaluators.map((e) => ({ id: e.id, name: e.name })),
  });
  const emit = (event: PlaygroundEvent) => send(event.type, event);
  const outcome = await executeRun(ports, run, emit, controller.signal);
  send('done', outcome);
  if (!res.destroyed) res.end();
}
