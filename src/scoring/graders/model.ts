import type { ChatMessage, ChatRequest, CompletionResult } from '../../inference/types.js';
import { askUntilParsed } from '../ask.js';
import { parsePointwise } from '../judge/verdict.js';
import {
  failed,
  type GraderContext,
  type GraderPorts,
  type GraderResult,
  scored,
  type TokenUsage,
} from './result.js';
import type { LabelModelGrader, ModelInput, SamplingParams, ScoreModelGrader } from './schemas.js';
import { renderTemplate } from './template.js';

type Part = Exclude<ModelInput['content'], string | unknown[]> | string;

function renderPart(part: Part, ns: GraderContext): Record<string, unknown> {
  if (typeof part === 'string') return { type: 'text', text: renderTemplate(part, { ...ns }) };
  if (part.type === 'input_image') {
    return {
      type: 'image_url',
      image_url: {
        url: renderTemplate(part.image_url, { ...ns }),
        ...(part.detail ? { detail: part.detail } : {}),
      },
    };
  }
  if (part.type === 'input_audio') return { type: 'input_audio', input_audio: part.input_audio };
  return { type: 'text', text: renderTemplate(part.text, { ...ns }) };
}

/** The grader's input messages with their templates rendered (throws TemplateError). */
export function renderMessages(input: readonly ModelInput[], ns: GraderContext): ChatMessage[] {
  return input.map((m) => {
    const c = m.content;
    if (typeof c === 'string') return { role: m.role, content: renderTemplate(c, { ...ns }) };
    const parts = (Array.isArray(c) ? c : [c]) as Part[];
    const rendered = parts.map((p) => renderPart(p, ns));
    // All-text content is sent as one string: every chat upstream takes that.
    if (rendered.every((p) => p.type === 'text')) {
      return { role: m.role, content: rendered.map((p) => p.text as string).join('') };
    }
    return { role: m.role, content: rendered };
  });
}

export function samplingOf(params: SamplingParams | undefined): Record<string, unknown> {
  if (!params) return {};
  const out: Record<string, unknown> = {};
  const maxTokens = params.max_completion_tokens ?? params.max_completions_tokens;
  if (maxTokens !== null && maxTokens !== undefined) out.max_completion_tokens = maxTokens;
  for (const k of ['temperature', 'top_p', 'seed', 'reasoning_effort'] as const) {
    const v = params[k];
    if (v !== null && v !== undefined) out[k] = v;
  }
  return out;
}

interface Tally {
  usage: Record<string, TokenUsage>;
  cost: number;
  calls: number;
  lastText: string;
  refused: string | null;
}

function refusalOf(result: CompletionResult): string | null {
  const choices = result.body.choices;
  const first = Array.isArray(choices)
    ? (choices[0] as { message?: { refusal?: unknown } } | undefined)
    : undefined;
  const refusal = first?.message?.refusal;
  return typeof refusal === 'string' && refusal.length > 0 ? refusal : null;
}

/** Asks until the reply parses, twice at most; null when it never did (or the model refused). */
function ask<T>(
  ports: GraderPorts,
  model: string,
  request: ChatRequest,
  parse: (text: string) => T | null,
  tally: Tally,
  signal: AbortSignal,
): Promise<T | null> {
  return askUntilParsed({
    call: () => ports.complete(model, request, signal),
    parse: (result) => parse(result.text),
    seen: (result) => {
      tally.calls += 1;
      tally.cost += result.cost;
      const u = result.usage;
      if (u) {
        const prev = tally.usage[model] ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
        tally.usage[model] = {
          prompt_tokens: prev.prompt_tokens + u.prompt_tokens,
          completion_tokens: prev.completion_tokens + u.completion_tokens,
          total_tokens: prev.total_tokens + u.total_tokens,
        };
      }
      tally.lastText = result.text;
      tally.refused = refusalOf(result);
      return tally.refused !== null;
    },
  });
}

async function guarded(
  tally: Tally,
  signal: AbortSignal,
  body: () => Promise<GraderResult>,
): Promise<GraderResult> {
  try {
    return await body();
  } catch (err) {
    if (signal.aborted) throw err;
    const message = err instanceof Error ? err.message : 'The model call failed';
    return failed('model_grader_server_error', message, {
      usage: tally.usage,
      cost: tally.cost,
      calls: tally.calls,
    });
  }
}

function noReply(tally: Tally, what: string): GraderResult {
  const fields = {
    usage: tally.usage,
    cost: tally.cost,
    calls: tally.calls,
    logs: tally.lastText.slice(0, 2000),
  };
  if (tally.refused)
    return failed('model_grader_refusal_error', `The model refused: ${tally.refused}`, fields);
  return failed('model_grader_parse_error', `The model did not reply with ${what} twice`, fields);
}

/** The reply's schema: the score bounded by the grader's range, so that a structured-output model keeps to it. */
export function scoreSchema(min: number, max: number) {
  return {
    type: 'object',
    properties: {
      score: { type: 'number', minimum: min, maximum: max },
      reasoning: { type: 'string' },
    },
    required: ['score', 'reasoning'],
    additionalProperties: false,
  } as const;
}

export function rangeOf(grader: ScoreModelGrader): [number, number] {
  const [min = 0, max = 1] = grader.range ?? [];
  return [min, max];
}

export async function scoreModel(
  grader: ScoreModelGrader,
  ns: GraderContext,
  ports: GraderPorts,
  signal: AbortSignal,
): Promise<GraderResult> {
  const [min, max] = rangeOf(grader);
  const messages = renderMessages(grader.input, ns);
  const tally: Tally = { usage: {}, cost: 0, calls: 0, lastText: '', refused: null };
  const request: ChatRequest = {
    ...samplingOf(grader.sampling_params),
    model: grader.model,
    messages: [
      ...messages,
      {
        role: 'system',
        content: `Reply with only a JSON object {"score": <a number from ${min} to ${max}>, "reasoning": "<short>"}.`,
      },
    ],
    response_format: {
      type: 'json_schema',
      json_schema: { name: 'score', strict: true, schema: scoreSchema(min, max) },
    },
  };
  return guarded(tally, signal, async () => {
    const verdict = await ask(ports, grader.model, request, parsePointwise, tally, signal);
    if (!verdict) return noReply(tally, `{"score": number}`);
    const fields = { usage: tally.usage, cost: tally.cost, calls: tally.calls, reason: verdict.reasoning };
    if (verdict.score < min || verdict.score > max) {
      return failed(
        'model_grader_parse_error',
        `The model's score ${verdict.score} is outside [${min}, ${max}]`,
        {
          ...fields,
          logs: tally.lastText.slice(0, 2000),
        },
      );
    }
    const passed = grader.pass_threshold === undefined ? null : verdict.score >= grader.pass_threshold;
    return scored(verdict.score, passed, {
      ...fields,
      scores: { score: verdict.score, reasoning: verdict.reasoning },
    });
  });
}

/** The label of a reply: JSON `{"label": …}` (structured output or found in prose), one of `labels`. */
export function parseLabel(text: string, labels: readonly string[]): string | null {
  const trimmed = text.trim();
  const candidates = [
    trimmed,
    /```(?:json)?\s*([\s\S]*?)```/i.exec(trimmed)?.[1],
    trimmed.slice(trimmed.indexOf('{'), trimmed.lastIndexOf('}') + 1),
  ];
  for (const c of candidates) {
    if (!c) continue;
    try {
      const v: unknown = JSON.parse(c);
      const label = v && typeof v === 'object' ? (v as { label?: unknown }).label : undefined;
      if (typeof label === 'string' && labels.includes(label.trim())) return label.trim();
    } catch {
      // not this candidate
    }
  }
  return null;
}

export async function labelModel(
  grader: LabelModelGrader,
  ns: GraderContext,
  ports: GraderPorts,
  signal: AbortSignal,
): Promise<GraderResult> {
  const messages = renderMessages(grader.input, ns);
  const tally: Tally = { usage: {}, cost: 0, calls: 0, lastText: '', refused: null };
  const schema = {
    type: 'object',
    properties: { label: { type: 'string', enum: grader.labels }, reasoning: { type: 'string' } },
    required: ['label', 'reasoning'],
    additionalProperties: false,
  };
  const request: ChatRequest = {
    model: grader.model,
    messages: [
      ...messages,
      {
        role: 'system',
        content: `Reply with only a JSON object {"label": <one of ${JSON.stringify(grader.labels)}>, "reasoning": "<short>"}.`,
      },
    ],
    response_format: { type: 'json_schema', json_schema: { name: 'label', strict: true, schema } },
  };
  return guarded(tally, signal, async () => {
    const label = await ask(ports, grader.model, request, (t) => parseLabel(t, grader.labels), tally, signal);
    if (label === null) return noReply(tally, `{"label": one of ${JSON.stringify(grader.labels)}}`);
    const passed = grader.passing_labels.includes(label);
    return scored(passed ? 1 : 0, passed, {
      usage: tally.usage,
      cost: tally.cost,
      calls: tally.calls,
      reason: `label: ${label}`,
      scores: { label },
    });
  });
}
