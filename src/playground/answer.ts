import type { LogWriter } from '../capture/types.js';
import { assembleCompletion } from '../llm/assemble.js';
import type { ModelCaller } from '../llm/call-model.js';
import type { ResolvedModel } from '../llm/models/types.js';
import { CallAbortedError } from '../llm/provider-layer.js';
import { DONE } from '../llm/providers/types.js';
import { recordedOutput } from '../llm/recorded-output.js';
import { SseReader, ssePayloads } from '../llm/sse.js';
import type { FrameSink, StreamResult } from '../llm/stream-pump.js';
import type { ChatRequest, Usage } from '../llm/types.js';
import type { Payer } from '../shared/budget.js';
import { ApiError, type ErrorBody, errorOf } from '../shared/errors.js';
import { newId } from '../shared/ids.js';

/** What the browser is told while the models answer (each event tagged with its model's index). */
export type PlaygroundEvent =
  | { type: 'delta'; index: number; text: string }
  | { type: 'answer'; index: number; answer: ModelAnswer }
  | { type: 'scores'; index: number; scores: AnswerScore[] };

export type Emit = (event: PlaygroundEvent) => void;

/** One model's answer, as the playground shows it and its task log keeps it. */
export interface ModelAnswer {
  model: string;
  task_log_id: string | null;
  output: string | null;
  usage: Usage | null;
  latency_ms: number;
  cost: number;
  error: ErrorBody | null;
}

/** An evaluator's verdict on one answer. */
export interface AnswerScore {
  evaluator_id: string;
  name: string;
  score: number | null;
  passed: boolean | null;
  reason: string | null;
  error: ErrorBody | null;
  cost: number;
}

/** Where one model's call is recorded: the playground container's task log of the call. */
export interface Recording {
  logWriter: LogWriter;
  projectId: string;
  containerId: string;
  /** The run's common metadata (run id, the prompt version it was opened from). */
  metadata: Record<string, unknown>;
  prompt: { id: string; version: number } | null;
}

/** The text deltas of a chat-completion event stream, handed on as the frames arrive. */
function deltaSink(index: number, emit: Emit): FrameSink {
  const reader = new SseReader();
  const tell = (frames: string | Buffer) => {
    const events = typeof frames === 'string' ? reader.pushText(frames) : reader.push(frames);
    for (const { data } of events) {
      if (data === DONE || data === '') continue;
      let text: unknown;
      try {
        const chunk = JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[] };
        text = chunk.choices?.[0]?.delta?.content;
      } catch {
        continue;
      }
      if (typeof text === 'string' && text !== '') emit({ type: 'delta', index, text });
    }
  };
  return {
    write(frames) {
      tell(frames);
      return true;
    },
    drained: () => Promise.resolve(),
    end(frames) {
      if (frames !== null) tell(frames);
    },
  };
}

const failure = (err: unknown): ErrorBody =>
  errorOf(
    err,
    { code: 'internal_error', message: 'Internal error' },
    (e) => e instanceof ApiError || e instanceof CallAbortedError,
  );

/**
 * One model's answer to the edited request, streamed through the one model call (the model's limits,
 * the payer's budgets, the provider layer) and recorded as a task log of the playground container.
 * Never throws: a refusal or an upstream failure is the answer's error.
 */
export async function answerWith(
  caller: ModelCaller,
  call: { index: number; model: ResolvedModel; ref: string; request: ChatRequest; payer: Payer },
  recording: Recording | null,
  signal: AbortSignal,
  emit: Emit,
): Promise<ModelAnswer> {
  const startedAt = Date.now();
  let refused = false;
  let result: StreamResult | null = null;
  let error: ErrorBody | null = null;
  try {
    result = await caller.stream(
      call.model,
      call.request,
      {
        payer: call.payer,
        signal,
        requestText: null,
        refused: async () => {
          refused = true;
        },
        upstream: { collect: true },
      },
      (opened) => opened.value.pipe(deltaSink(call.index, emit)),
    );
    error = result.error;
  } catch (err) {
    error = failure(err);
  }
  const output =
    result && error === null ? recordedOutput(assembleCompletion(ssePayloads(result.sse), call.ref)) : null;
  const answer: ModelAnswer = {
    model: call.ref,
    task_log_id: null,
    output,
    usage: result?.usage ?? null,
    latency_ms: Math.round(result?.latencyMs ?? Date.now() - startedAt),
    cost: result?.cost ?? 0,
    error,
  };
  // A call the budget refused was never made: nothing to record, as at the gateway.
  if (recording && !refused) answer.task_log_id = record(recording, call, answer, result, startedAt);
  emit({ type: 'answer', index: call.index, answer });
  return answer;
}

function record(
  recording: Recording,
  call: { index: number; ref: string; request: ChatRequest },
  answer: ModelAnswer,
  result: StreamResult | null,
  startedAt: number,
): string | null {
  const id = newId('log');
  try {
    recording.logWriter.write({
      id,
      projectId: recording.projectId,
      containerId: recording.containerId,
      model: call.ref,
      output: answer.error ? null : answer.output,
      request: call.request,
      ...(result?.sse && !answer.error ? { responseSse: result.sse } : {}),
      usage: answer.usage,
      latencyMs: answer.latency_ms,
      cost: answer.cost,
      status: answer.error ? 'error' : 'success',
      error: answer.error,
      metadata: {
        ...recording.metadata,
        route: 'playground',
        model_index: call.index,
        stream: true,
        ...(result ? { served_by: result.servedBy, attempts: result.attempts } : {}),
      },
      createdAt: new Date(startedAt).toISOString(),
      ...(recording.prompt ? { promptId: recording.prompt.id, promptVersion: recording.prompt.version } : {}),
    });
    return id;
  } catch {
    return null;
  }
}
