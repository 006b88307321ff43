import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends bytes on a fresh TCP connection and reads the one response the server writes until it closes
 * (or `timeoutMs`): for requests that no HTTP client library would send.
 */
export function rawExchange(url: string, request: string | Buffer, timeoutMs = 5000): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete response within ${timeoutMs} ms: ${Buffer.concat(chunks).toString()}`));
    }, timeoutMs);
    socket.on('data', (d) => chunks.push(d));
    // A reset after the answer was written still leaves the answer read.
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no HTTP response: ${JSON.stringify(text)}`));
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: text.slice(split + 4) });
    });
    socket.write(request);
  });
}
