import fs from 'node:fs';
import net from 'node:net';

/** The first port of Linux's ephemeral range (where listen(0) and outgoing connections take theirs). */
function ephemeralStart(): number {
  try {
    const start = Number(
      fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isInteger(start) && start > 2048 ? start : 32768;
  } catch {
    return 32768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port nothing listens on, for a server in another process (PostgreSQL, Redis, `evalgate serve`) that
 * binds it itself. It is drawn below the ephemeral range: a port listen(0) gave and released would be
 * free for any other test's listen(0) or outgoing connection to take before that server binds it.
 */
export async function unusedPort(): Promise<number> {
  const top = ephemeralStart();
  const bottom = Math.max(1024, top - 12_000);
  for (let tries = 0; tries < 100; tries++) {
    const port = bottom + Math.floor(Math.random() * (top - bottom));
    if (await canListen(port)) return port;
  }
  throw new Error(`no unused port found in ${bottom}-${top - 1}`);
}
