import type { Command } from 'commander';
import { resolveConfig } from '../client/config.js';

/**
 * `evalgate mcp`: the MCP server for desktop agents, over stdio. It relays each message to the server's
 * Streamable HTTP endpoint (`<base URL>/mcp`) with the API key, and the answers back: the tools run on
 * the server, with the key's permissions, exactly as over HTTP.
 */
export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description(
      'MCP server over stdio for coding agents (Claude Code, Cursor, Codex…): relays to <base URL>/mcp with the API key',
    )
    .action(async (_options: unknown, command: Command) => {
      const globals = command.optsWithGlobals<{ baseUrl?: string; apiKey?: string }>();
      const config = resolveConfig({
        ...(globals.baseUrl ? { baseURL: globals.baseUrl } : {}),
        ...(globals.apiKey ? { apiKey: globals.apiKey } : {}),
      });
      const { relayStdio } = await import('./mcp-relay.js');
      await relayStdio(`${config.baseURL.replace(/\/+$/, '')}/mcp`, config.apiKey, config.timeoutMs);
    });
}
