import type { Command } from 'commander';
import {
  ConfigurationError,
  Evalgate as EvalgateClient,
  EvalgateError,
  UnprocessableEntityError,
} from '../client/index.js';

/**
 * The API commands' link to the server: a client configured by the client's own rules (EVALGATE_API_KEY,
 * EVALGATE_BASE_URL, EVALGATE_ENVIRONMENT, EVALGATE_REGION, EVALGATE_TIMEOUT, EVALGATE_MAX_RETRIES, the
 * config file), with the global `--base-url` and `--api-key` flags taking precedence.
 */
export function clientFrom(command: Command): EvalgateClient {
  const globals = command.optsWithGlobals<{ baseUrl?: string; apiKey?: string }>();
  return new EvalgateClient({
    ...(globals.baseUrl ? { baseURL: globals.baseUrl } : {}),
    ...(globals.apiKey ? { apiKey: globals.apiKey } : {}),
  });
}

/**
 * Ends the command with an exit code and the lines to print on stderr (each prefixed `evalgate: `).
 * Thrown rather than exiting on the spot, so that progress bars are stopped and output is flushed by
 * the one exit path in main.ts.
 */
export class CliExit extends Error {
  constructor(
    readonly exitCode: number,
    readonly lines: string[],
  ) {
    super(lines[0] ?? `exit ${exitCode}`);
    this.name = 'CliExit';
  }
}

/** A usage problem found by a command itself (commander reports its own with exit code 1 too). */
export function usage(message: string): CliExit {
  return new CliExit(1, [message]);
}

/** What to print for an error: one line (`404 not_found: Run 'run_x' not found`), a 422 with its details. */
export function describeError(err: unknown): { exitCode: number; lines: string[] } {
  if (err instanceof CliExit) return { exitCode: err.exitCode, lines: err.lines };
  if (err instanceof UnprocessableEntityError && err.detail.length > 0) {
    const count = err.detail.length === 1 ? '1 problem' : `${err.detail.length} problems`;
    return {
      exitCode: 1,
      lines: [
        `422 ${err.code}: ${count}`,
        ...err.detail.map((d) => `  ${d.loc.join('.')}: ${d.msg}${d.type ? ` (${d.type})` : ''}`),
      ],
    };
  }
  if (err instanceof ConfigurationError && err.missing === 'api_key') {
    return {
      exitCode: 1,
      lines: [
        `${err.code}: Missing API key: set the EVALGATE_API_KEY environment variable, pass --api-key${err.elsewhere}`,
      ],
    };
  }
  if (err instanceof ConfigurationError) {
    return {
      exitCode: 1,
      lines: [`${err.code}: ${err.message} (the CLI also takes --api-key and --base-url)`],
    };
  }
  if (err instanceof EvalgateError) {
    const status = err.status === undefined ? '' : `${err.status} `;
    // The client's messages start with the status; the code goes between them.
    const message = err.status === undefined ? err.message : err.message.replace(/^\d{3} /, '');
    return { exitCode: 1, lines: [`${status}${err.code}: ${message}`] };
  }
  return { exitCode: 1, lines: [err instanceof Error ? err.message : String(err)] };
}

/**
 * `delete <ref>` of a resource named by id or by label (or name): a ref with the resource's id prefix is
 * the id, anything else is looked up first. Returns the server's deletion.
 */
export async function deleteByRef<Deleted>(
  resource: { get(ref: string): Promise<{ id: string }>; delete(id: string): Promise<Deleted> },
  idPrefix: string,
  ref: string,
): Promise<Deleted> {
  const id = ref.startsWith(idPrefix) ? ref : (await resource.get(ref)).id;
  return resource.delete(id);
}

/** Collects a repeatable option. */
export const collect = (value: string, all: string[]): string[] => [...all, value];

/** A whole number option ≥ min. */
export function wholeNumber(name: string, min = 1): (raw: string) => number {
  return (raw: string) => {
    if (!/^\d+$/.test(raw) || Number(raw) < min)
      throw usage(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
    return Number(raw);
  };
}

/** A number flag's value (any finite number); undefined when the flag is not given. */
export function numberOption(flag: string, raw: string): number;
export function numberOption(flag: string, raw: string | undefined): number | undefined;
export function numberOption(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) throw usage(`${flag} must be a number, got "${raw}"`);
  return value;
}

/** `k=v` pairs into an object (values are strings). */
export function keyValues(name: string, pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw usage(`${name} takes key=value, got "${pair}"`);
    out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}
