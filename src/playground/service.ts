import type { Kysely } from 'kysely';
import type { Principal } from '../auth/authenticator.js';
import { grants, type Permission } from '../auth/permissions.js';
import type { LogWriter } from '../capture/types.js';
import { ensureContainer } from '../catalog/containers/resolve.js';
import type { Database } from '../db/schema.js';
import type { EvaluatorSnapshot } from '../engine/plan.js';
import { requireEvaluator } from '../evaluators/service.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { ChatRequest } from '../llm/types.js';
import { PROMPT_NAME_PATTERN, type PromptVersion } from '../prompts/schemas.js';
import { createPrompt, createVersion, requirePrompt } from '../prompts/service.js';
import { PromptVariableError, renderMessages } from '../prompts/template.js';
import { snapshotEvaluators } from '../runs/resolution.js';
import type { RunContext } from '../runs/service.js';
import type { Payer } from '../shared/budget.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { type AnswerScore, answerWith, type Emit, type ModelAnswer } from './answer.js';
import type { PlaygroundRun, SaveVersion } from './schemas.js';
import { type ScoringPorts, scoreAnswer } from './scores.js';

/** The container every playground call is recorded in (created on first use). */
export const PLAYGROUND_CONTAINER = 'playground';

/**
 * What the playground needs: the one model call (limits, budgets, provider layer), model resolution,
 * the task-log writer (null when recording is off), the runs' evaluator snapshots and the sandbox.
 */
export interface PlaygroundPorts extends ScoringPorts {
  db: Kysely<Database>;
  logWriter: LogWriter | null;
  runs: RunContext;
}

/** One run checked and resolved, before anything is called. */
export interface PreparedRun {
  id: string;
  /** Who pays: the project, and the key when the run came through one. */
  principal: Payer;
  models: { ref: string; model: ResolvedModel; request: ChatRequest }[];
  evaluators: EvaluatorSnapshot[];
  containerId: string | null;
  messages: ChatRequest['messages'];
  expected: unknown;
  prompt: { id: string; version: number } | null;
}

/** The whole outcome of a run: each model's answer and its scores, in the order the models were given. */
export interface RunOutcome {
  id: string;
  answers: (ModelAnswer & { scores: AnswerScore[] })[];
}

function require(principal: Pick<Principal, 'permissions'>, permission: Permission, why: string): void {
  if (!grants(principal.permissions, permission)) {
    throw new ApiError('permission_denied', `This API key lacks the '${permission}' permission (${why})`, {
      required: permission,
    });
  }
}

function rendered(body: PlaygroundRun): ChatRequest['messages'] {
  try {
    return renderMessages(body.messages, body.variable_types ?? {}, body.variables ?? {});
  } catch (err) {
    if (!(err instanceof PromptVariableError)) throw err;
    const issues: ValidationIssue[] = err.problems.map((p) => ({
      loc: ['body', 'variables', p.variable],
      msg: p.message,
      type: p.kind,
    }));
    throw ApiError.validation(issues);
  }
}

async function resolveModels(ports: PlaygroundPorts, projectId: string, refs: readonly string[]) {
  const issues: ValidationIssue[] = [];
  const models: ResolvedModel[] = [];
  for (const [i, ref] of refs.entries()) {
    try {
      models.push(await ports.resolveModel(projectId, ref));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      issues.push({ loc: ['body', 'models', i], msg: `Model '${ref}': ${err.message}`, type: 'model' });
    }
  }
  if (issues.length > 0) throw ApiError.validation(issues);
  return models;
}

/**
 * The evaluators as a run snapshots them (their judge models resolved, the sandbox checked), whatever
 * container each belongs to: the playground tries any evaluator of the project. Unknown: 404.
 */
async function snapshots(ports: PlaygroundPorts, projectId: string, refs: readonly string[]) {
  const out: EvaluatorSnapshot[] = [];
  for (const [i, ref] of refs.entries()) {
    const row = await requireEvaluator(ports.db, projectId, ref).catch((err: unknown) => {
      if (err instanceof ApiError && err.code === 'not_found') {
        throw new ApiError('not_found', `Evaluator '${ref}' not found`, {
          resource: 'evaluator',
          ref,
          loc: ['body', 'evaluators', i],
        });
      }
      throw err;
    });
    out.push(...(await snapshotEvaluators(ports.runs, projectId, [row.id], row.container_id ?? '', false)));
  }
  return out;
}

/**
 * Checks a run before anything is called: the variables render the messages, every model and evaluator
 * resolves in the project, the key may call what the evaluators call. Creates the playground container
 * on first use. Every problem is a 4xx here, before the stream starts.
 */
export async function prepareRun(ports: PlaygroundPorts, principal: Principal, body: PlaygroundRun) {
  const messages = rendered(body);
  const models = await resolveModels(ports, principal.projectId, body.models);
  const recording = ports.logWriter !== null;
  const containerId = recording
    ? await ensureContainer(
        ports.db,
        principal.projectId,
        PLAYGROUND_CONTAINER,
        'Calls made in the playground',
      )
    : null;
  const evaluators = await snapshots(ports, principal.projectId, body.evaluators ?? []);
  for (const ask of ports.scorerKinds.permissionsAskedBy(evaluators, 'scoring in the playground')) {
    require(principal, ask.permission, ask.why);
  }
  const parameters = { ...body.parameters };
  const prepared: PreparedRun = {
    id: newId('pgr'),
    principal: { projectId: principal.projectId, keyId: principal.keyId },
    models: models.map((model, i) => {
      const ref = body.models[i] ?? model.slug;
      const request: ChatRequest = {
        ...parameters,
        model: ref,
        messages,
        ...(body.tools ? { tools: body.tools } : {}),
        ...(body.response_format ? { response_format: body.response_format } : {}),
        stream: true,
        stream_options: { include_usage: true },
      };
      return { ref, model, request };
    }),
    evaluators,
    containerId,
    messages,
    expected: body.expected ?? null,
    prompt: body.prompt ?? null,
  };
  return prepared;
}

/**
 * Runs a prepared run: every model answers at once (its deltas told as they come), each answer is
 * recorded, then scored by the evaluators. Resolves once every model has answered and been scored.
 */
export async function executeRun(
  ports: PlaygroundPorts,
  run: PreparedRun,
  emit: Emit,
  signal: AbortSignal,
): Promise<RunOutcome> {
  const payer = run.principal;
  const recording =
    ports.logWriter && run.containerId
      ? {
          logWriter: ports.logWriter,
          projectId: payer.projectId,
          containerId: run.containerId,
          metadata: { playground_run: run.id },
          prompt: run.prompt,
        }
      : null;
  const answers = await Promise.all(
    run.models.map(async (m, index) => {
      const answer = await answerWith(ports.caller, { index, ...m, payer }, recording, signal, emit);
      const scores =
        run.evaluators.length && answer.error === null
          ? await scoreAnswer(
              ports,
              payer,
              run.evaluators,
              { input: run.messages, answer, expected: run.expected },
              signal,
            )
          : [];
      if (scores.length) emit({ type: 'scores', index, scores });
      return { ...answer, scores };
    }),
  );
  return { id: run.id, answers };
}

/**
 * "Save as new version": the edited request as the next version of the prompt named (by the prompts
 * service: its checks, its author), or the first version of a new prompt of that name.
 */
export async function saveVersion(
  db: Kysely<Database>,
  principal: Principal,
  body: SaveVersion,
): Promise<PromptVersion> {
  const { prompt, variable_types, ...rest } = body;
  const fields = { ...rest, ...(variable_types ? { variables: variable_types } : {}) };
  const existing = await requirePrompt(db, principal.projectId, prompt).catch((err: unknown) => {
    if (err instanceof ApiError && err.code === 'not_found') return null;
    throw err;
  });
  if (existing) return createVersion({ db }, principal, existing.id, fields);
  if (!new RegExp(PROMPT_NAME_PATTERN).test(prompt)) {
    throw ApiError.invalid(
      ['body', 'prompt'],
      `'${prompt}' is no prompt of the project, nor a valid new name`,
    );
  }
  const created = await createPrompt({ db }, principal, { name: prompt, ...fields });
  return created.version;
}
