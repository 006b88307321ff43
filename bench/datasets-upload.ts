/**
 * Dataset upload benchmark: starts Evalgate (built) as a child process on a temporary SQLite database, streams
 * generated rows to POST /v1/datasets as JSON lines, checks the last row reads back, and prints one JSON
 * document with the throughput and the server's peak resident set size (VmHWM).
 *
 *   npm run bench:datasets                              # 1,000,000 rows on SQLite
 *   npm run bench:datasets -- --rows 200000 --database-url postgres://postgres@127.0.0.1/bench
 */
import os from 'node:os';
import { Readable } from 'node:stream';
import { arg, rssMb, startServer } from './lib.js';

const rows = Number(arg('rows', '1000000'));
const databaseUrl = arg('database-url', '');

const row = (i: number) =>
  JSON.stringify({
    id: `row-${i}`,
    input: `Question ${i}: what is ${i} plus ${i}?`,
    expected: String(i + i),
    metadata: { bucket: i % 10, source: 'bench' },
  });

function* body(count: number, sent: { bytes: number }): Generator<Buffer> {
  let chunk = '';
  for (let i = 0; i < count; i++) {
    chunk += `${row(i)}\n`;
    if (chunk.length >= 256 * 1024) {
      const buf = Buffer.from(chunk);
      sent.bytes += buf.length;
      yield buf;
      chunk = '';
    }
  }
  if (chunk) {
    const buf = Buffer.from(chunk);
    sent.bytes += buf.length;
    yield buf;
  }
}

async function main(): Promise<void> {
  const server = await startServer(databaseUrl ? { EVALGATE_DATABASE_URL: databaseUrl } : {});
  const { child, url, key } = server;
  try {
    const before = rssMb(child.pid!);
    const sent = { bytes: 0 };
    const t0 = performance.now();
    const res = await fetch(`${url}/v1/datasets?label=bench-${Date.now()}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
      body: Readable.toWeb(Readable.from(body(rows, sent))) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    const created = (await res.json()) as { id?: string; item_count?: number };
    const seconds = (performance.now() - t0) / 1000;
    if (res.status !== 201 || created.item_count !== rows) {
      throw new Error(`upload answered ${res.status}: ${JSON.stringify(created).slice(0, 500)}`);
    }
    const after = rssMb(child.pid!);
    const last = await fetch(`${url}/v1/datasets/${created.id}/items?range=${rows - 1}:${rows}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const lastBody = (await last.json()) as { data: { data: unknown }[] };
    const readBack = JSON.stringify(lastBody.data[0]?.data) === row(rows - 1);
    process.stdout.write(
      `${JSON.stringify(
        {
          rows,
          seconds: Math.round(seconds * 100) / 100,
          rows_per_s: Math.round(rows / seconds),
          upload_mb: Math.round(sent.bytes / 1024 / 102.4) / 10,
          mb_per_s: Math.round(sent.bytes / 1024 / 1024 / seconds),
          server_peak_rss_mb: after.peak,
          server_rss_before_upload_mb: before.now,
          database: databaseUrl ? 'postgres' : 'sqlite',
          last_row_read_back: readBack,
          node: process.version,
          cpus: os.cpus().length,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await server.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:datasets failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
