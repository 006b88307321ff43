import { createHash } from 'node:crypto';
import type { ChatMessage, ChatRequest, CompletionResult } from '../../llm/types.js';
import { describeScale, type Scale, scoreOnScale } from '../../shared/scale.js';
import { Tally } from '../../shared/tally.js';
import { askUntilParsed } from '../ask.js';
import type { ScoreInput, ScoreOutcome, Scorer } from '../types.js';
import { compileTemplate, missingVariables, type TemplateValues, variablesOf } from './template.js';
import { PAIRWISE_SCHEMA, POINTWISE_SCHEMA, parsePairwise, parsePointwise, type Winner } from './verdict.js';

export interface JudgeDefinition {
  mode: string;
  model: string | null;
  prompt: string | null;
  inference_parameters: Record<string, unknown>;
  pass_threshold: number | null;
  /** The evaluator's scale: a pointwise verdict off it is an error of its position. Absent: any number. */
  scale?: Scale | null;
}

/** Calls the judge model: already bound to the resolved model and to the run's concurrency and back-off. */
export type JudgeCall = (request: ChatRequest, signal: AbortSignal) => Promise<CompletionResult>;

const POINTWISE_SYSTEM =
  'You are an impartial evaluator. Follow the instructions, then reply with only a JSON object ' +
  '{"score": <number>, "reasoning": "<one or two sentences>"}.';
const PAIRWISE_SYSTEM =
  'You are an impartial evaluator comparing two responses, A and B, to the same input. Judge only their ' +
  'quality, not their order or length. Reply with only a JSON object {"winner": "A" | "B" | "tie", "reasoning": "<short>"}.';

// The parts of a judge request that are the same at every position, built once.
const POINTWISE_FORMAT = {
  type: 'json_schema',
  json_schema: { name: 'verdict', strict: true, schema: POINTWISE_SCHEMA },
} as const;
const PAIRWISE_FORMAT = {
  type: 'json_schema',
  json_schema: { name: 'verdict', strict: true, schema: PAIRWISE_SCHEMA },
} as const;
const POINTWISE_SYSTEM_MESSAGE: ChatMessage = { role: 'system', content: POINTWISE_SYSTEM };
const PAIRWISE_SYSTEM_MESSAGE: ChatMessage = { role: 'system', content: PAIRWISE_SYSTEM };

/** The item fields a judge needs at a position, beyond the sample output every judge reads. */
export function judgeNeeds(def: JudgeDefinition): { expected: boolean; baseline: boolean } {
  const vars = variablesOf(def.prompt ?? '');
  return { expected: vars.has('expected'), baseline: def.mode === 'pairwise' };
}

const NO_METADATA: Record<string, unknown> = Object.freeze({});

/** The values a prompt reads at a position; the items' metadata merged only when the prompt uses it. */
function valuesOf(input: ScoreInput, metadata: boolean): TemplateValues {
  const s = input.sample;
  const g = input.groundTruth;
  return {
    input: s?.input ?? g?.input ?? null,
    output: s?.output ?? null,
    expected: g?.expected ?? s?.expected ?? null,
    baseline: input.baseline?.output ?? null,
    metadata: metadata ? { ...(g?.metadata ?? {}), ...(s?.metadata ?? {}) } : NO_METADATA,
    ...s?.session,
  };
}

function pointwisePrompt(template: string): string {
  return variablesOf(template).has('output')
    ? template
    : `${template}\n\nInput:\n{{input}}\n\nOutput:\n{{output}}`;
}

function pairwisePrompt(template: string): string {
  const vars = variablesOf(template);
  if (vars.has('output_a') && vars.has('output_b')) return template;
  return `${template}\n\nInput:\n{{input}}\n\nResponse A:\n{{output_a}}\n\nResponse B:\n{{output_b}}`;
}

/** The judge calls of one position, and the last reply's text (kept as logs when none parsed). */
interface Asked {
  tally: Tally;
  lastText: string;
}

const asked = (): Asked => ({ tally: new Tally(), lastText: '' });

/** One call whose reply must parse; an unparseable reply is retried once, then reported as an error. */
function ask<T>(
  call: JudgeCall,
  request: ChatRequest,
  parse: (text: string) => T | null,
  seen: Asked,
  signal: AbortSignal,
): Promise<T | null> {
  return askUntilParsed({
    call: () => call(request, signal),
    parse: (result) => parse(result.text),
    seen: (result) => {
      seen.tally.add(request.model, { usage: result.usage, cost: result.cost, latencyMs: result.latencyMs });
      seen.lastText = result.text;
      return false;
    },
  });
}

function outcome(seen: Asked, fields: Partial<ScoreOutcome>): ScoreOutcome {
  const t = seen.tally.total();
  return {
    score: null,
    passed: null,
    reason: null,
    error: null,
    logs: null,
    usage: { prompt_tokens: t.prompt, completion_tokens: t.completion },
    cost: t.cost,
    latencyMs: t.latencyMs,
    extra: { calls: t.calls },
    ...fields,
  };
}

function passedOf(def: JudgeDefinition, score: number): boolean | null {
  return def.pass_threshold === null ? null : score >= def.pass_threshold;
}

/**
 * A verdict off the evaluator's scale (1.5 on 0..1, 7 on an integer 1..5): the judge did not follow its
 * prompt, so its number means nothing on the scale and is never stored as a score (nor clamped). The
 * position is an error, the verdict kept in the reasoning.
 */
function offScale(
  def: JudgeDefinition,
  verdict: { score: number; reasoning: string },
): Partial<ScoreOutcome> | null {
  if (!def.scale || def.scale.type === 'labels' || scoreOnScale(def.scale, verdict.score)) return null;
  const message = `The judge answered ${verdict.score}, outside the evaluator's scale (${describeScale(def.scale)})`;
  return {
    error: { code: 'judge_off_scale', message },
    reason: `verdict ${verdict.score}: ${verdict.reasoning}`,
  };
}

/** Pairwise score for the sample: 1 wins both orders, 0 loses both, 0.5 otherwise. */
export function pairwiseScore(first: Winner, second: Winner): { score: number; inconsistent: boolean } {
  // In the first order the sample is A; in the second it is B.
  const sampleWinsFirst = first === 'A';
  const sampleWinsSecond = second === 'B';
  const sampleLosesFirst = first === 'B';
  const sampleLosesSecond = second === 'A';
  const mirrored =
    (sampleWinsFirst && sampleWinsSecond) ||
    (sampleLosesFirst && sampleLosesSecond) ||
    (first === 'tie' && second === 'tie');
  let score = 0.5;
  if (sampleWinsFirst && sampleWinsSecond) score = 1;
  else if (sampleLosesFirst && sampleLosesSecond) score = 0;
  return { score, inconsistent: !mirrored };
}

/**
 * The hash of the exact prompt a judge asks with (its system message and the template as sent), so that
 * scores of a changed prompt are never averaged with the old one's unawares (runs and agreement group by it).
 */
export function judgePromptHash(def: Pick<JudgeDefinition, 'mode' | 'prompt'>): string {
  const template = def.prompt ?? '';
  const parts =
    def.mode === 'pairwise'
      ? [PAIRWISE_SYSTEM, pairwisePrompt(template)]
      : [POINTWISE_SYSTEM, pointwisePrompt(template)];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);
}

/** A position whose prompt would name a variable without a value: missing (with the reason), not scored. */
function missingOutcome(template: string, values: TemplateValues): ScoreOutcome | null {
  const missing = missingVariables(template, values);
  if (missing.length === 0) return null;
  const names = missing.map((m) => `{{${m}}}`).join(', ');
  return outcome(asked(), {
    error: { code: 'missing_data', message: `The prompt's ${names} has no value at this position` },
  });
}

export function createJudgeScorer(def: JudgeDefinition, call: JudgeCall): Scorer {
  const params = def.inference_parameters;
  const template = def.prompt ?? '';
  const model = def.model ?? '';
  const pointwisePromptOf = compileTemplate(pointwisePrompt(template));
  const pairwisePromptOf = compileTemplate(pairwisePrompt(template));
  const metadata = variablesOf(template).has('metadata');
  const promptHash = judgePromptHash(def);

  async function pointwise(input: ScoreInput, signal: AbortSignal): Promise<ScoreOutcome> {
    const seen = asked();
    const values = valuesOf(input, metadata);
    const missing = missingOutcome(template, values);
    if (missing) return missing;
    const request: ChatRequest = {
      ...params,
      model,
      messages: [POINTWISE_SYSTEM_MESSAGE, { role: 'user', content: pointwisePromptOf(values) }],
      response_format: POINTWISE_FORMAT,
    };
    const verdict = await ask(call, request, parsePointwise, seen, signal);
    if (!verdict) {
      return outcome(seen, {
        error: { code: 'judge_unparseable', message: 'The judge did not reply with {"score": number} twice' },
        logs: seen.lastText.slice(0, 2000),
      });
    }
    const off = offScale(def, verdict);
    if (off) return outcome(seen, off);
    return outcome(seen, {
      score: verdict.score,
      passed: passedOf(def, verdict.score),
      reason: verdict.reasoning,
    });
  }

  async function pairwise(input: ScoreInput, signal: AbortSignal): Promise<ScoreOutcome> {
    const seen = asked();
    const values = valuesOf(input, metadata);
    const missing = missingOutcome(template, values);
    if (missing) return missing;
    const requestFor = (a: unknown, b: unknown): ChatRequest => ({
      ...params,
      model,
      messages: [
        PAIRWISE_SYSTEM_MESSAGE,
        { role: 'user', content: pairwisePromptOf({ ...values, output_a: a, output_b: b }) },
      ],
      response_format: PAIRWISE_FORMAT,
    });
    // Both orders, so that a judge's preference for a position cancels out.
    const [first, second] = await Promise.all([
      ask(call, requestFor(values.output, values.baseline), parsePairwise, seen, signal),
      ask(call, requestFor(values.baseline, values.output), parsePairwise, seen, signal),
    ]);
    if (!first || !second) {
      return outcome(seen, {
        error: {
          code: 'judge_unparseable',
          message: 'The judge did not reply with {"winner": "A"|"B"|"tie"} twice',
        },
        logs: seen.lastText.slice(0, 2000),
      });
    }
    const { score, inconsistent } = pairwiseScore(first.winner, second.winner);
    return outcome(seen, {
      score,
      passed: passedOf(def, score),
      reason: `sample as A: ${first.reasoning} | sample as B: ${second.reasoning}`,
      extra: { calls: seen.tally.total().calls, verdicts: [first.winner, second.winner], inconsistent },
    });
  }

  const scoreOne = def.mode === 'pairwise' ? pairwise : pointwise;

  return {
    async scoreBatch(inputs, signal) {
      return Promise.all(
        inputs.map(async (input) => {
          try {
            const scored = await scoreOne(input, signal);
            scored.extra = { ...scored.extra, prompt_hash: promptHash };
            return scored;
          } catch (err) {
            if (signal.aborted) throw err;
            // Typed failures (upstream errors, a run that gave up on rate limits) keep their code.
            const e = err as { code?: unknown; message?: unknown };
            const known = err instanceof Error && typeof e.code === 'string';
            // The call that failed is counted, with nothing paid for it.
            const failedCall = asked();
            failedCall.tally.add(model, { usage: null, cost: 0 });
            return outcome(failedCall, {
              error: {
                code: known ? String(e.code) : 'judge_failed',
                message: known ? String(e.message) : 'The judge call failed',
              },
            });
          }
        }),
      );
    },
    async close() {},
  };
}
