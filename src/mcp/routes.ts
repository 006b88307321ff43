import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../auth/authenticator.js';
import { takeRateLimit } from '../auth/guard.js';
import { API_VERSION } from '../http/openapi.js';
import { ApiError } from '../shared/errors.js';
import type { McpPorts } from './ports.js';

export const MCP_PATH = '/mcp';

let loading: Promise<
  [typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('./server.js')]
> | null = null;

/**
 * The MCP SDK, zod and the tools' schemas (about 190 modules of a start's 2,700), loaded on
 * the first call to `/mcp` rather than by every process that serves the API.
 */
function loadMcp() {
  loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('./server.js'),
  ]);
  loading.catch(() => {
    loading = null;
  });
  return loading;
}

/**
 * The key of the request, checked as the API's guard checks it (401 without a valid key, 429 past the
 * key's rate, with the rate-limit headers); which permission a call needs is each tool's to check.
 */
async function authenticate(req: FastifyRequest, reply: FastifyReply, ports: McpPorts): Promise<Principal> {
  const principal = await ports.auth.authenticate(req.headers.authorization);
  await takeRateLimit(ports.limiter, principal.keyId, reply);
  return principal;
}

/**
 * MCP's Streamable HTTP transport at `/mcp`, stateless: every POST carries its own key and is answered
 * by a server made for it (JSON answers, no session id). Nothing is kept between requests, so any
 * process of a cluster, behind any load balancer, answers any call, and a revoked key stops at once.
 * Without sessions there is no stream for the server to push on: GET and DELETE answer 405.
 */
export const mcpRoutes: FastifyPluginAsync<{ ports: McpPorts }> = async (app, { ports }) => {
  app.post(MCP_PATH, { schema: { hide: true } }, async (req, reply) => {
    const principal = await authenticate(req, reply, ports);
    const [{ StreamableHTTPServerTransport }, { buildMcpServer }] = await loadMcp();
    const origin = ports.publicUrl ?? `${req.protocol}://${req.host}`;
    const server = buildMcpServer(
      { principal, ports, origin, fail: (err) => req.log.error({ err }, 'MCP tool failed') },
      API_VERSION,
    );
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    // The transport writes the answer itself; the headers set so far (rate limit, request id) go with it.
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value);
    }
    reply.raw.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req.raw, reply.raw, req.body);
  });

  const notAllowed = async () => {
    throw new ApiError(
      'method_not_allowed',
      'This MCP server is stateless: send JSON-RPC messages with POST /mcp (there is no stream or session to open or end)',
      null,
      [],
      { Allow: 'POST' },
    );
  };
  app.get(MCP_PATH, { schema: { hide: true } }, notAllowed);
  app.delete(MCP_PATH, { schema: { hide: true } }, notAllowed);
};
