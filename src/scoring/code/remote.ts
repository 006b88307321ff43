import type { Agent, request } from 'undici';
import { ApiError } from '../../shared/errors.js';
import { loadUndici } from '../../shared/undici-module.js';
import { outcomeOf, type ScoreInput, type ScoreOutcome, type Scorer, ScorerSetupError } from '../types.js';
import { type CheckAnswer, type CodeToCheck, throwProblems } from './check-source.js';
import { RUNNER_BODY_LIMIT, type WireEvaluator, wireLimits } from './runner-wire.js';
import type { SandboxLimits } from './sandbox.js';
import type { CodeEvaluatorSpec, SandboxStatus } from './scorer.js';

export interface RemoteSandboxOptions {
  /** The runner's base URL (`EVALGATE_SANDBOX_URL`). */
  url: string;
  /** The shared secret (`EVALGATE_SANDBOX_TOKEN`). */
  token: string;
  /** This process's limits, asked of the runner (which caps each one by its own). */
  limits: SandboxLimits;
  timeoutMs: number;
}

/** The runner could not be asked (refused connection, unknown host, wrong token, a broken answer). */
class RunnerUnavailable extends Error {}

interface Answer {
  status: number;
  body: unknown;
}

/** Largest answer read from the runner (its outcomes are bounded: 4 KB of logs, 4,000 characters of reason). */
const MAX_ANSWER = 256 * 1024 * 1024;
/** A batch is sent in requests of at most this many bytes of positions. */
const REQUEST_BYTES = RUNNER_BODY_LIMIT / 2;

function errorOf(body: unknown): { code: string; message: string } | null {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof error?.code === 'string' && typeof error.message === 'string'
    ? { code: error.code, message: error.message }
    : null;
}

/**
 * Code evaluators run by a sandbox runner (`evalgate sandbox-runner`) instead of this process: the
 * evaluator's source, requirements and limits go to the runner, which builds the scorer with its own
 * sandbox; each batch's positions go to it and its outcomes come back. A runner that cannot be reached
 * is `sandbox_unavailable`, as a machine without bubblewrap is.
 */
export class RemoteSandbox {
  /** Made on the first request (undici is loaded then: src/shared/undici-module.ts). */
  private agent: Agent | null = null;

  constructor(private readonly options: RemoteSandboxOptions) {}

  /** Sends one request; network failures and a refused token become RunnerUnavailable. */
  async call(
    method: 'GET' | 'POST' | 'DELETE',
    route: string,
    body?: string,
    signal?: AbortSignal,
  ): Promise<Answer> {
    const where = `the sandbox runner at ${this.options.url}`;
    let res: Awaited<ReturnType<typeof request>>;
    try {
      const { Agent, request } = await loadUndici();
      this.agent ??= new Agent({
        headersTimeout: 0, // a batch takes as long as its samples (the runner bounds each one)
        bodyTimeout: 0,
        connect: { timeout: 10_000 },
        keepAliveTimeout: 30_000,
      });
      res = await request(`${this.options.url}${route}`, {
        method,
        dispatcher: this.agent,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body,
        signal,
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      const code = (err as { code?: string }).code ?? (err as Error).message;
      throw new RunnerUnavailable(
        `${where} cannot be reached (${code}); is the sandbox service running, and EVALGATE_SANDBOX_URL right?`,
      );
    }
    let text = '';
    try {
      for await (const chunk of res.body) {
        text += chunk;
        if (text.length > MAX_ANSWER) throw new Error(`an answer over ${MAX_ANSWER} bytes`);
      }
    } catch (err) {
      res.body.destroy();
      if (signal?.aborted) throw signal.reason;
      throw new RunnerUnavailable(`${where} broke off its answer: ${(err as Error).message}`);
    }
    if (res.statusCode === 401) {
      throw new RunnerUnavailable(
        `${where} refused this process's token: EVALGATE_SANDBOX_TOKEN must be the runner's own`,
      );
    }
    try {
      return { status: res.statusCode, body: text === '' ? null : JSON.parse(text) };
    } catch {
      throw new RunnerUnavailable(`${where} answered ${res.statusCode} with something that is not JSON`);
    }
  }

  /** What went wrong with an answer the caller did not expect. */
  unexpected(answer: Answer): string {
    const error = errorOf(answer.body);
    return `the sandbox runner at ${this.options.url} answered ${answer.status}${error ? `: ${error.message}` : ''}`;
  }

  /** Whether the runner can sandbox (its answer), or why it cannot be asked. */
  async status(): Promise<SandboxStatus> {
    try {
      const answer = await this.call('GET', '/v1/status');
      if (answer.status === 200) return answer.body as SandboxStatus;
      return { available: false, reason: this.unexpected(answer) };
    } catch (err) {
      if (err instanceof RunnerUnavailable) return { available: false, reason: err.message };
      throw err;
    }
  }

  /** A code evaluator's source and requirements checked by the runner's Python (422 or 501 as locally). */
  async check(input: CodeToCheck): Promise<void> {
    let answer: Answer;
    try {
      answer = await this.call(
        'POST',
        '/v1/check',
        JSON.stringify({ source: input.source ?? null, requirements: input.requirements ?? null }),
      );
    } catch (err) {
      if (!(err instanceof RunnerUnavailable)) throw err;
      throw new ApiError('sandbox_unavailable', `Code evaluators cannot be checked: ${err.message}`);
    }
    if (answer.status !== 200) {
      throw new ApiError(
        'sandbox_unavailable',
        `Code evaluators cannot be checked: ${this.unexpected(answer)}`,
      );
    }
    throwProblems(answer.body as CheckAnswer);
  }

  /** Opens a scorer on the runner; returns its id. Setup errors come back with their own codes. */
  async open(spec: CodeEvaluatorSpec): Promise<string> {
    const evaluator: WireEvaluator = {
      id: spec.id,
      source: spec.source,
      requirements: spec.requirements ? [...spec.requirements] : null,
    };
    const body = JSON.stringify({
      evaluator,
      limits: wireLimits(this.options.limits, this.options.timeoutMs),
    });
    const answer = await this.ask(() => this.call('POST', '/v1/scorers', body));
    if (answer.status === 201) return (answer.body as { id: string }).id;
    const error = errorOf(answer.body);
    if (answer.status === 422 && error) throw new ScorerSetupError(error.code, error.message);
    throw new ScorerSetupError('sandbox_unavailable', this.unexpected(answer));
  }

  /** A call whose failure to reach the runner is the scorer's `sandbox_unavailable`. */
  async ask(send: () => Promise<Answer>): Promise<Answer> {
    try {
      return await send();
    } catch (err) {
      if (err instanceof RunnerUnavailable) throw new ScorerSetupError('sandbox_unavailable', err.message);
      throw err;
    }
  }

  async createScorer(spec: CodeEvaluatorSpec): Promise<Scorer> {
    return new RemoteScorer(this, spec, await this.open(spec));
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }
}

/** Positions as JSON, one string each; a position that cannot be encoded gets its error here. */
function encodeEach(inputs: ScoreInput[], outcomes: ScoreOutcome[]): Array<[number, string]> {
  const encoded: Array<[number, string]> = [];
  inputs.forEach((input, i) => {
    try {
      encoded.push([i, JSON.stringify(input)]);
    } catch (err) {
      outcomes[i] = outcomeOf({
        error: {
          code: 'invalid_input',
          message: `position cannot be sent to Python: ${(err as Error).message}`,
        },
      });
    }
  });
  return encoded;
}

/** One evaluator's scorer on the runner. */
class RemoteScorer implements Scorer {
  constructor(
    private readonly sandbox: RemoteSandbox,
    private readonly spec: CodeEvaluatorSpec,
    private id: string,
  ) {}

  async scoreBatch(inputs: ScoreInput[], signal: AbortSignal): Promise<ScoreOutcome[]> {
    const outcomes: ScoreOutcome[] = new Array(inputs.length);
    const encoded = encodeEach(inputs, outcomes);
    for (let start = 0; start < encoded.length; ) {
      let end = start;
      let bytes = 0;
      while (end < encoded.length && (end === start || bytes + encoded[end]![1].length < REQUEST_BYTES)) {
        bytes += encoded[end]![1].length + 1;
        end++;
      }
      const part = encoded.slice(start, end);
      const got = await this.send(
        `{"inputs":[${part.map(([, json]) => json).join(',')}]}`,
        part.length,
        signal,
      );
      part.forEach(([i], k) => {
        outcomes[i] = got[k]!;
      });
      start = end;
    }
    return outcomes;
  }

  private async send(
    body: string,
    count: number,
    signal: AbortSignal,
    retried = false,
  ): Promise<ScoreOutcome[]> {
    signal.throwIfAborted();
    const answer = await this.sandbox.ask(() =>
      this.sandbox.call('POST', `/v1/scorers/${this.id}/batches`, body, signal),
    );
    if (answer.status === 404 && !retried) {
      // The runner restarted or closed an idle scorer: open it again and resend.
      this.id = await this.sandbox.open(this.spec);
      return this.send(body, count, signal, true);
    }
    const outcomes = (answer.body as { outcomes?: unknown } | null)?.outcomes;
    if (answer.status !== 200 || !Array.isArray(outcomes) || outcomes.length !== count) {
      throw new ScorerSetupError('sandbox_unavailable', this.sandbox.unexpected(answer));
    }
    return outcomes as ScoreOutcome[];
  }

  async close(): Promise<void> {
    await this.sandbox.call('DELETE', `/v1/scorers/${this.id}`).catch(() => {});
  }
}
