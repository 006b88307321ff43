/**
 * The floor any Node gateway pays: a pass-through proxy, node:http in front of an undici Pool, bytes
 * piped both ways, no parsing. Usage: tsx bench/bare-proxy.ts <upstream origin>
 */
import http from 'node:http';
import { Pool } from 'undici';

const upstream = new Pool(process.argv[2]!, { connections: 256, pipelining: 1 });
const HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length']);

const server = http.createServer(async (req, res) => {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && typeof v === 'string') headers[k] = v;
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  try {
    const up = await upstream.request({
      method: req.method as 'POST',
      path: req.url ?? '/',
      headers,
      body: req,
      signal: controller.signal,
    });
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(up.headers)) if (!HOP.has(k) && v !== undefined) out[k] = v;
    res.writeHead(up.statusCode, out);
    for await (const chunk of up.body) res.write(chunk);
    res.end();
  } catch {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  }
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` })}\n`,
  );
});
process.on('SIGTERM', () => process.exit(0));
