import { createHash } from 'node:crypto';
import type { ChatMessage, ChatRequest } from '../../llm/types.js';
import { chatAnswer } from '../../shared/chat-answer.js';
import { Tally } from '../../shared/tally.js';
import { askUntilParsed } from '../ask.js';
import { parsePointwise } from '../judge/verdict.js';
import { labelReason } from './label.js';
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

/** A grader's model calls (by model), the last reply's text and whether the model refused. */
interface Asked {
  tally: Tally;
  lastText: string;
  refused: string | null;
}

const asked = (): Asked => ({ tally: new Tally(), lastText: '', refused: null });

/** What the calls cost: the tokens of each model that reported them, the money, the calls. */
function spentOf(seen: Asked): { usage: Record<string, TokenUsage>; cost: number; calls: number } {
  const usage: Record<string, TokenUsage> = {};
  for (const [model, c] of Object.entries(seen.tally.byKey())) {
    if (c.reported > 0) {
      usage[model] = { prompt_tokens: c.prompt, completion_tokens: c.completion, total_tokens: c.total };
    }
  }
  const total = seen.tally.total();
  return { usage, cost: total.cost, calls: total.calls };
}

/** Asks until the reply parses, twice at most; null when it never did (or the model refused). */
function ask<T>(
  ports: GraderPorts,
  model: string,
  request: ChatRequest,
  parse: (text: string) => T | null,
  seen: Asked,
  signal: AbortSignal,
): Promise<T | null> {
  return askUntilParsed({
    call: () => ports.complete(model, request, signal),
    parse: (result) => parse(result.text),
    seen: (result) => {
      seen.tally.add(model, { usage: result.usage, cost: result.cost });
      seen.lastText = result.text;
      seen.refused = chatAnswer(result.body).refusal;
      return seen.refused !== null;
    },
  });
}

async function guarded(
  seen: Asked,
  signal: AbortSignal,
  body: () => Promise<GraderResult>,
): Promise<GraderResult> {
  try {
    return await body();
  } catch (err) {
    if (signal.aborted) throw err;
    const message = err instanceof Error ? err.message : 'The model call failed';
    return failed('model_grader_server_error', message, spentOf(seen));
  }
}

function noReply(seen: Asked, what: string): GraderResult {
  const fields = { ...spentOf(seen), logs: seen.lastText.slice(0, 2000) };
  if (seen.refused) return failed('model_grader_refusal_error', `The model refused: ${seen.refused}`, fields);
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
  const seen = asked();
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
  return guarded(seen, signal, async () => {
    const verdict = await ask(ports, grader.model, request, parsePointwise, seen, signal);
    if (!verdict) return noReply(seen, `{"score": number}`);
    const fields = { ...spentOf(seen), reason: verdict.reasoning };
    if (verdict.score < min || verdict.score > max) {
      return failed(
        'model_grader_parse_error',
        `The model's score ${verdict.score} is outside [${min}, ${max}]`,
        {
          ...fields,
          logs: seen.lastText.slice(0, 2000),
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

/**
 * The hash of what a model grader asks with: its input messages (the templates, before rendering) and what
 * shapes its reply instruction (the labels, or the score range). A changed prompt gets a new hash.
 */
export function graderPromptHash(grader: ScoreModelGrader | LabelModelGrader): string {
  const reply = grader.type === 'label_model' ? grader.labels : rangeOf(grader);
  return createHash('sha256')
    .update(JSON.stringify([grader.type, grader.input, reply]))
    .digest('hex')
    .slice(0, 16);
}

export async function labelModel(
  grader: LabelModelGrader,
  ns: GraderContext,
  ports: GraderPorts,
  signal: AbortSignal,
): Promise<GraderResult> {
  const messages = renderMessages(grader.input, ns);
  const seen = asked();
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
  return guarded(seen, signal, async () => {
    const label = await ask(ports, grader.model, request, (t) => parseLabel(t, grader.labels), seen, signal);
    if (label === null) return noReply(seen, `{"label": one of ${JSON.stringify(grader.labels)}}`);
    const passed = grader.passing_labels.includes(label);
    return scored(passed ? 1 : 0, passed, {
      ...spentOf(seen),
      reason: labelReason(label),
      scores: { label },
    });
  });
}
