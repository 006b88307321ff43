import http from 'node:http';

/** An answer read whole: its status, headers, body parsed as JSON (the text where it is not) and text. */
export interface FreshReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  text: string;
}

/**
 * A request to 127.0.0.1:`port` on a connection of its own (no keep-alive agent), so that the kernel
 * spreads a test's requests over the processes of `serve --workers N`; JSON in, the answer read whole.
 */
export function requestOnFreshConnection(
  port: number,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<FreshReply> {
  return new Promise<FreshReply>((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: {
          ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          let body: any = text;
          try {
            body = JSON.parse(text);
          } catch {
            // Not JSON: the text as it came.
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const ms = options.timeoutMs ?? 20_000;
    req.setTimeout(ms, () => req.destroy(new Error(`${method} ${path}: no answer in ${ms / 1000} s`)));
    req.end(payload);
  });
}
