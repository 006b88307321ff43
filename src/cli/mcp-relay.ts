import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** JSON-RPC's "server error" range: the relay could not get an answer from the server. */
const RELAY_ERROR = -32000;

function requestId(message: JSONRPCMessage): string | number | null {
  return 'method' in message && 'id' in message ? message.id : null;
}

/**
 * Relays MCP messages between this process's stdio (the agent) and the server's Streamable HTTP endpoint
 * until stdin ends. A request the server cannot be asked (down, a refused key) is answered with a
 * JSON-RPC error that says why, so that the agent never waits for an answer that will not come.
 */
export async function relayStdio(url: string, apiKey: string, timeoutMs: number): Promise<void> {
  const http = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
    // Each request gets the client's timeout (EVALGATE_TIMEOUT), as the other API commands' do.
    fetch: (input, init) => {
      const timeout = AbortSignal.timeout(timeoutMs);
      return fetch(input, {
        ...init,
        signal: init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout,
      });
    },
  });
  const stdio = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    stdio.onclose = () => {
      void http.close().finally(resolve);
    };
  });
  http.onmessage = (message) => {
    void stdio.send(message);
  };
  http.onerror = (err) => {
    process.stderr.write(`evalgate mcp: ${err.message}\n`);
  };
  stdio.onmessage = (message) => {
    const id = requestId(message);
    http.send(message).catch((err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      process.stderr.write(`evalgate mcp: ${url}: ${reason}\n`);
      if (id === null) return;
      void stdio.send({
        jsonrpc: '2.0',
        id,
        error: {
          code: RELAY_ERROR,
          message: `Evalgate at ${url} did not answer: ${reason}`,
        },
      });
    });
  };
  await http.start();
  await stdio.start();
  process.stdin.once('end', () => {
    void stdio.close();
  });
  await closed;
}
