/**
 * Slow-body clients against `evalgate serve` with its default request deadlines: N authenticated
 * connections each send their headers and then a 100,000-byte body one byte every 5 s. Prints one JSON
 * document: the server's open file descriptors before (the baseline), 30 s in (connected) and after
 * they were cut, when and how they were cut, and the server's CPU time over the window.
 *
 *   npx tsx bench/slow-clients.ts [connections=200]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const CONNECTIONS = Number(process.argv[2] ?? 200);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-slow-'));
const port = 20_000 + Math.floor(Math.random() * 20_000);

const child = spawn(
  process.execPath,
  ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--port', String(port)],
  {
    env: { ...process.env, EVALGATE_DATA_DIR: dir, EVALGATE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
let banner = '';
await new Promise<void>((resolve) => {
  child.stdout?.on('data', (d: Buffer) => {
    banner += d.toString();
    if (/\n\s+eg_\S+/.test(banner)) resolve();
  });
});
const key = /\n\s+(eg_\S+)/.exec(banner)?.[1] ?? '';
const fds = () => fs.readdirSync(`/proc/${child.pid}/fd`).length;
const cpuMs = () => {
  const stat = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(stat[11]) + Number(stat[12])) * 1000) / 100;
};

// A warm request, so that what the server opens lazily is in the baseline.
await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
const baseline = fds();
const cpu0 = cpuMs();
const started = Date.now();
let connected = 0;
const sample = setTimeout(() => {
  connected = fds();
}, 30_000);
const results = await new Promise<{ status: number; ms: number }[]>((resolve) => {
  const out: { status: number; ms: number }[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => {
      text += d.toString();
    });
    socket.on('error', () => {});
    socket.write(
      `POST /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
    );
    const drip = setInterval(() => socket.write(' '), 5000);
    socket.on('close', () => {
      clearInterval(drip);
      out.push({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0), ms: Date.now() - started });
      if (out.length === CONNECTIONS) resolve(out);
    });
  }
});
clearTimeout(sample);
await new Promise((r) => setTimeout(r, 1000));
const after = fds();
const cpu = cpuMs() - cpu0;
child.kill('SIGTERM');
const times = results.map((r) => r.ms).sort((a, b) => a - b);
const statuses: Record<string, number> = {};
for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
process.stdout.write(
  `${JSON.stringify(
    {
      connections: CONNECTIONS,
      statuses,
      cut_after_ms: { min: times[0], median: times[Math.floor(times.length / 2)], max: times.at(-1) },
      server_fds: { baseline, connected_at_30s: connected, after_cut: after },
      server_cpu_ms: cpu,
      server_cpu_ms_per_connection: cpu / CONNECTIONS,
    },
    null,
    2,
  )}\n`,
);
fs.rmSync(dir, { recursive: true, force: true });
