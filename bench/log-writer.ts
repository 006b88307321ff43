/**
 * The task log writer's CPU cost per record, measured apart from the gateway: the threaded writer of
 * the build is fed gateway-shaped records (the mock upstream's real answers, plain and streamed) at a
 * fixed rate, and the CPU time of each thread of this process is read from /proc (Linux).
 *
 *   npm run bench:log-writer                                  # 40,000 records a mode at 8,000/s, SQLite
 *   npm run bench:log-writer -- --records 20000 --rate 4000 --database-url postgres://…/evalgate_bench
 *   npm run bench:log-writer -- --answer-chars 2000     # longer answers (streamed in 8-character pieces)
 *   npm run bench:log-writer -- --continuity off        # a container that keeps no conversation continuity
 *   npm run bench:log-writer -- --turns 3               # conversations of 3 calls, each repeating the last
 *
 * Each record carries the trace context the gateway gives a call without a `traceparent` (a fresh trace
 * id and span id): the writer stores its gateway span and trace summary and assigns it to a session, as
 * it does a gateway call's.
 *
 * Prints one JSON document: per mode, microseconds of CPU per record on the writer's thread (the
 * busiest thread besides the main one), on the main thread (making the records and handing them
 * over), and on the process's other threads (garbage collector helpers).
 * The database is migrated first: give it one of its own.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { callTrace } from '../src/capture/traceparent.js';
import type { TaskLogRecord } from '../src/capture/types.js';
import { insertContainer } from '../src/catalog/containers/repository.js';
import { openDatabase } from '../src/db/database.js';
import { completionText } from '../src/llm/providers/openai-compatible.js';
import { newId, nowIso } from '../src/shared/ids.js';
import { ensureProject } from '../src/tenancy/projects.js';
import { startMockUpstream } from '../test/fixtures/mock-upstream.js';
import { arg, prose, serverEntry, threadCpuUs, threadSplit } from './lib.js';

const records = Number(arg('records', '40000'));
const rate = Number(arg('rate', '8000'));
/** The mock's answer: its own short sentence by default, else this many characters of prose. */
const answerChars = Number(arg('answer-chars', '0'));
/** `off`: the records' container keeps no conversation continuity (calls without a key get no session). */
const continuity = arg('continuity', 'on') !== 'off';
/** Calls per conversation: call n is turn n % turns of conversation n / turns, its input the turns before. */
const turns = Math.max(1, Number(arg('turns', '1')));

/** The mock upstream's answer to one call, as the gateway hands it to the writer. */
async function answer(mockUrl: string, stream: boolean): Promise<string> {
  const res = await fetch(`${mockUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Say hello.' }],
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    }),
  });
  return res.text();
}

async function main(): Promise<void> {
  if (!fs.existsSync('/proc/self/task'))
    throw new Error('this benchmark reads per-thread CPU time from /proc');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-bench-'));
  const url = arg('database-url', `sqlite:${path.join(dataDir, 'evalgate.db')}`);
  const mock = await startMockUpstream({
    record: false,
    ...(answerChars > 0 ? { reply: () => prose(answerChars) } : {}),
  });
  try {
    const handle = await openDatabase(url);
    await handle.migrate();
    const projectId = (await ensureProject(handle.db, `bench-${newId('prj')}`)).id;
    const containerId = newId('ctr');
    await insertContainer(handle.db, {
      id: containerId,
      project_id: projectId,
      label: containerId,
      description: null,
      metadata: '{}',
      created_at: nowIso(),
      updated_at: nowIso(),
    });
    if (!continuity)
      await handle.db
        .updateTable('containers')
        .set({ session_continuity: 0 })
        .where('id', '=', containerId)
        .execute();
    await handle.close();

    serverEntry(); // builds dist: the thread runs the compiled writer, as the server does
    const built = '../dist/capture/threaded-writer.js';
    const { createThreadedLogWriter } = (await import(
      built
    )) as typeof import('../src/capture/threaded-writer.js');
    const plain = await answer(mock.url, false);
    const sse = await answer(mock.url, true);
    // The answer's text, as the gateway hands it to the writer with a plain call.
    const answerText = completionText(JSON.parse(plain));
    const report: Record<string, unknown> = {};
    for (const mode of ['plain', 'stream'] as const) {
      let made = 0;
      /** The n-th call's request: its conversation's turns so far, the mock's answer after each. */
      const requestOf = (n: number) => {
        const conversation = Math.floor(n / turns);
        const messages: { role: string; content: string }[] = [];
        for (let t = 0; t <= n % turns; t++) {
          if (t > 0) messages.push({ role: 'assistant', content: answerText });
          messages.push({
            role: 'user',
            content: turns > 1 ? `${mode} ${conversation}: question ${t + 1}?` : 'Say hello.',
          });
        }
        return JSON.stringify({
          model: 'openai/gpt-4o-mini',
          messages,
          ...(mode === 'stream' ? { stream: true } : {}),
        });
      };
      const record = (): TaskLogRecord => ({
        id: newId('log'),
        projectId,
        containerId,
        model: 'openai/gpt-4o-mini',
        output: mode === 'plain' ? answerText : null,
        requestText: requestOf(made++),
        ...(mode === 'plain' ? { responseText: plain } : { responseSse: sse }),
        usage: { prompt_tokens: 9, completion_tokens: 10, total_tokens: 19 },
        latencyMs: 1.234,
        cost: 0.00001,
        status: 'success',
        error: null,
        metadata: { stream: mode === 'stream', served_by: 'openai/gpt-4o-mini', attempts: 1 },
        createdAt: new Date().toISOString(),
        ...callTrace(undefined),
      });
      const writer = createThreadedLogWriter(url, {});
      // The thread starts with the first record; its start-up is not counted.
      writer.write(record());
      await writer.flush();
      const before = threadCpuUs('self');
      const t0 = Date.now();
      for (let sent = 0; sent < records; ) {
        const due = Math.min(records, Math.floor(((Date.now() - t0) / 1000) * rate));
        for (; sent < due; sent++) writer.write(record());
        await sleep(2);
      }
      await writer.flush();
      const seconds = (Date.now() - t0) / 1000;
      const after = threadCpuUs('self');
      const split = threadSplit(process.pid, before, after);
      const perRecord = (us: number) => Math.round((us / records) * 10) / 10;
      report[mode] = {
        records,
        seconds,
        writer_thread_us_per_record: perRecord(split.busiest_other),
        main_thread_us_per_record: perRecord(split.main),
        other_threads_us_per_record: perRecord(split.rest),
        stats: writer.stats(),
      };
      await writer.close();
    }
    const settings = {
      rate_per_s: rate,
      continuity,
      turns,
      database: url.startsWith('sqlite:') ? 'sqlite' : 'postgres',
      answer_chars: answerText.length,
      stream_events: sse.split('\n\n').filter((e) => e.startsWith('data: ')).length,
    };
    process.stdout.write(`${JSON.stringify({ benchmark: 'log-writer', settings, ...report }, null, 2)}\n`);
  } finally {
    await mock.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
