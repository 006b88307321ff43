/**
 * The trace store's cost: OTLP spans ingested per second and server CPU per span (protobuf and JSON
 * batches, one process, SQLite by default), then the latency of `GET /v1/traces/{id}` and of a filtered
 * `GET /v1/traces` with `--stored` spans in the store.
 *
 *   npm run bench:traces                                   # 100,000 spans a format, 1,000,000 stored
 *   npm run bench:traces -- --spans 20000 --stored 100000 --database-url postgres://…/evalgate_bench
 *
 * The server runs in this process (createServices + createApp, as `serve` does); request bodies are
 * encoded before the clock starts, so the CPU measured is the server's decoding, mapping and writing
 * (plus the loopback HTTP client's). Prints one JSON document. Give it a database of its own.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import protobuf from 'protobufjs';
import { createApp } from '../src/app.js';
import { createKey } from '../src/auth/key-store.js';
import { loadConfig } from '../src/config.js';
import { createServices } from '../src/services.js';
import { ensureProject } from '../src/tenancy/projects.js';
import { type NewSpanRow, storeSpans } from '../src/traces/store.js';
import { arg } from './lib.js';

const spansPerFormat = Number(arg('spans', '100000'));
const perRequest = Number(arg('batch', '200'));
const stored = Number(arg('stored', '1000000'));
const spansPerTrace = 10;

const hex = (n: number) => randomBytes(n).toString('hex');

/** One export request of `n` spans in traces of 10: a root, model calls (GenAI ≥ 1.37) and tool spans. */
function request(n: number) {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = [];
  let traceId = hex(16);
  let root = hex(8);
  for (let i = 0; i < n; i++) {
    if (i % spansPerTrace === 0) {
      traceId = hex(16);
      root = hex(8);
    }
    const isRoot = i % spansPerTrace === 0;
    const isCall = !isRoot && i % 2 === 1;
    spans.push({
      traceId,
      spanId: isRoot ? root : hex(8),
      ...(isRoot ? {} : { parentSpanId: root }),
      name: isRoot ? 'invoke_agent' : isCall ? 'chat gpt-4o-mini' : 'execute_tool lookup',
      kind: isCall ? 3 : 1,
      startTimeUnixNano: String(now + BigInt(i) * 1000n),
      endTimeUnixNano: String(now + BigInt(i) * 1000n + 5_000_000n),
      attributes: isCall
        ? [
            { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
            { key: 'gen_ai.provider.name', value: { stringValue: 'openai' } },
            { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o-mini' } },
            { key: 'gen_ai.usage.input_tokens', value: { intValue: '120' } },
            { key: 'gen_ai.usage.output_tokens', value: { intValue: '30' } },
            {
              key: 'gen_ai.input.messages',
              value: {
                stringValue:
                  '[{"role":"user","parts":[{"type":"text","content":"What is the order status?"}]}]',
              },
            },
            {
              key: 'gen_ai.output.messages',
              value: {
                stringValue: '[{"role":"assistant","parts":[{"type":"text","content":"It shipped today."}]}]',
              },
            },
          ]
        : [
            {
              key: 'gen_ai.operation.name',
              value: { stringValue: isRoot ? 'invoke_agent' : 'execute_tool' },
            },
          ],
      status: {},
    });
  }
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bench' } }] },
        scopeSpans: [{ scope: { name: 'bench' }, spans }],
      },
    ],
  };
}

function encoder() {
  const root = new protobuf.Root();
  const dir = path.resolve('data/otlp-proto');
  root.resolvePath = (_o, t) => (t.startsWith('google/protobuf/') ? t : path.join(dir, t));
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  const type = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  return (json: ReturnType<typeof request>): Uint8Array => {
    const copy = structuredClone(json) as any;
    for (const s of copy.resourceSpans[0].scopeSpans[0].spans) {
      s.traceId = Buffer.from(s.traceId, 'hex');
      s.spanId = Buffer.from(s.spanId, 'hex');
      if (s.parentSpanId) s.parentSpanId = Buffer.from(s.parentSpanId, 'hex');
    }
    return type.encode(type.fromObject(copy)).finish();
  };
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 100) / 100;
};

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-bench-traces-'));
  const url = arg('database-url', `sqlite:${path.join(dataDir, 'evalgate.db')}`);
  const config = loadConfig({
    EVALGATE_DATA_DIR: dataDir,
    EVALGATE_DATABASE_URL: url,
    EVALGATE_LOG_LEVEL: 'silent',
    EVALGATE_KEY_PEPPER: 'bench-pepper-0123456789abcdef012',
    EVALGATE_BODY_LIMIT: String(64 * 1024 * 1024),
  });
  const services = await createServices(config);
  const app = await createApp(services);
  await app.server.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const project = await ensureProject(services.db, 'bench');
  const key = (
    await createKey(services.db, services.pepper, { projectId: project.id, name: 'b', permissions: ['*'] })
  ).key;
  const auth = { authorization: `Bearer ${key}` };
  const encode = encoder();
  const out: Record<string, unknown> = {
    database: url.startsWith('postgres') ? 'postgres' : 'sqlite',
    cores: os.cpus().length,
  };

  for (const format of ['protobuf', 'json'] as const) {
    const bodies: (Uint8Array | string)[] = [];
    for (let i = 0; i < spansPerFormat; i += perRequest) {
      const json = request(perRequest);
      bodies.push(format === 'protobuf' ? encode(json) : JSON.stringify(json));
    }
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const res = await fetch(`${base}/v1/traces`, {
          method: 'POST',
          headers: {
            ...auth,
            'content-type': format === 'protobuf' ? 'application/x-protobuf' : 'application/json',
          },
          body,
        });
        if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    await services.traces.flush();
    const seconds = (performance.now() - t0) / 1000;
    const used = process.cpuUsage(cpu);
    await services.logWriter.flush();
    const total = bodies.length * perRequest;
    out[format] = {
      spans: total,
      spans_per_second: Math.round(total / seconds),
      cpu_us_per_span: Math.round(((used.user + used.system) / total) * 100) / 100,
    };
  }

  // The store filled directly (the writer's own insert), then reads through the API.
  const now = Date.now();
  const have = Number(
    (
      await services.db
        .selectFrom('spans')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
  const ids: string[] = [];
  const fillStart = performance.now();
  for (let done = have; done < stored; ) {
    const rows: NewSpanRow[] = [];
    for (let i = 0; i < 2000 && done < stored; i += spansPerTrace) {
      const traceId = hex(16);
      if (ids.length < 5000) ids.push(traceId);
      const root = hex(8);
      for (let j = 0; j < spansPerTrace; j++, done++) {
        const at = new Date(now - done * 1000).toISOString();
        const call = j % 2 === 1;
        rows.push({
          project_id: project.id,
          trace_id: traceId,
          span_id: j === 0 ? root : hex(8),
          parent_span_id: j === 0 ? null : root,
          container_id: null,
          name: call ? 'chat gpt-4o-mini' : 'step',
          kind: 'internal',
          operation: call ? 'chat' : null,
          started_at: at,
          ended_at: at,
          duration_ms: 5,
          status_code: done % 97 === 0 ? 'error' : 'unset',
          status_message: null,
          attributes: '{"gen_ai.operation.name":"chat"}',
          events: '[]',
          resource: '{"service.name":"bench"}',
          scope: null,
          session_id: null,
          model: call ? (done % 20 === 1 ? 'gpt-4o' : 'gpt-4o-mini') : null,
          model_call: call
            ? '{"task_log_id":null,"provider":"openai","model":"gpt-4o-mini","request_model":"gpt-4o-mini","response_model":null,"usage":{"input_tokens":120,"output_tokens":30,"total_tokens":150},"cost":0.00004,"content_captured":true}'
            : null,
          task_log_id: null,
          received_at: at,
        });
      }
    }
    // The task-log writer's thread may hold SQLite's lock a moment: retried, as the span writer does.
    for (let attempt = 0; ; attempt++) {
      try {
        await storeSpans(services.db, rows);
        break;
      } catch (err) {
        if (attempt >= 10) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
  const fillSeconds = (performance.now() - fillStart) / 1000;
  if (ids.length === 0) {
    const found = await services.db.selectFrom('traces').select('trace_id').limit(5000).execute();
    ids.push(...found.map((t) => t.trace_id));
  }
  const time = async (path: string) => {
    const t = performance.now();
    const res = await fetch(base + path, { headers: auth });
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    await res.arrayBuffer();
    return performance.now() - t;
  };
  const lookups: number[] = [];
  for (let i = 0; i < 200; i++) lookups.push(await time(`/v1/traces/${ids[(i * 7919) % ids.length]}`));
  const lists: Record<string, number[]> = { plain: [], model: [], errors: [], since: [] };
  const since = encodeURIComponent(new Date(now - 3_600_000).toISOString());
  for (let i = 0; i < 50; i++) {
    lists.plain!.push(await time('/v1/traces?limit=20'));
    lists.model!.push(await time('/v1/traces?model=gpt-4o&limit=20'));
    lists.errors!.push(await time('/v1/traces?errors=true&limit=20'));
    lists.since!.push(await time(`/v1/traces?since=${since}&limit=20&offset=40`));
  }
  out.reads = {
    stored_spans: Math.max(have, stored),
    fill_seconds: Math.round(fillSeconds),
    trace_lookup_ms: { p50: percentile(lookups, 50), p95: percentile(lookups, 95) },
    list_ms: Object.fromEntries(
      Object.entries(lists).map(([k, xs]) => [k, { p50: percentile(xs, 50), p95: percentile(xs, 95) }]),
    ),
  };
  console.log(JSON.stringify(out, null, 2));
  await app.close();
  await services.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
