import type { Range } from '../catalog/items.js';
import type { GenerateSide } from '../engine/plan.js';
import { formatRange } from '../engine/plan.js';
import type { Generation } from '../engine/positions.js';
import { isObject } from '../shared/json.js';
import {
  experimentGeneration,
  experimentView,
  isExperiment,
  namesPrompts,
  promptIssues,
  resolveExperiment,
} from './experiment.js';
import { toMessages } from './messages.js';
import { evalGeneration, type GenerationRequest } from './openai-generation.js';
import type { SideBody, SourceKind } from './types.js';

const TYPE = 'generate';

/** A generate side (an OpenAI eval run's carries `request`: how each item's request is built). */
export function generateSide(models: string[], range: Range, request?: GenerationRequest): GenerateSide {
  const side: GenerateSide = { type: TYPE, ref: null, models, range };
  if (request) side.request = { ...request };
  return side;
}

/** No side at all where the plan needs one (a monitor's ground truth): a generate side without models. */
export function emptySide(): GenerateSide {
  return generateSide([], { start: 0, end: 0 });
}

/**
 * The plain generation: the item's input as chat messages (with the side's sampling parameters, when it
 * gives some), the answer's text kept.
 */
function chat(parameters: Record<string, unknown> | null): Generation {
  return {
    request: (item, model) => ({ ...parameters, model, messages: toMessages(item.input), stream: false }),
    keep: (result) => result.text,
    output: (kept) => kept,
  };
}

/** The side's sampling parameters, as the request gave them (a closed set: see DataSource). */
const parametersOf = (body: SideBody): Record<string, unknown> | null =>
  isObject(body.parameters) && Object.keys(body.parameters).length > 0 ? body.parameters : null;

/** The stored parameters of a plain generate side (an eval run's request carries `params` instead). */
function storedParameters(side: GenerateSide): Record<string, unknown> | null {
  const request = side.request;
  if (!request || 'params' in request) return null;
  return isObject(request.parameters) ? request.parameters : null;
}

/**
 * Fresh completions from models, one launch per model, each item generated from the other side's. A side
 * that names `prompts` is an experiment's (./experiment.ts): one launch per prompt version × model, the
 * models optional (each version's own).
 */
export const generateSource: SourceKind = {
  type: TYPE,
  request: {
    fields: [],
    optional: ['models', 'prompts', 'parameters'],
    generates: true,
    issues(name, body) {
      const models = Array.isArray(body.models) ? body.models : [];
      const issues = [];
      if (body.models === undefined && !namesPrompts(body)) {
        issues.push({
          loc: ['body', name, 'models'],
          msg: `Field required for a ${TYPE} data source`,
          type: 'missing',
        });
      }
      if (name === 'baseline' && models.length > 1) {
        issues.push({
          loc: ['body', 'baseline', 'models'],
          msg: 'A generate baseline takes exactly one model',
          type: 'too_long',
        });
      }
      return [...issues, ...promptIssues(name, body)];
    },
    async resolve(ctx, { projectId, name, body, range }) {
      const models = Array.isArray(body.models) ? body.models.map(String) : [];
      await Promise.all(models.map((m, i) => ctx.checkModel(projectId, m, ['body', name, 'models', i])));
      const parameters = parametersOf(body);
      if (!namesPrompts(body)) {
        const side = generateSide(models, range);
        return parameters ? { ...side, request: { parameters } } : side;
      }
      const check = (m: string, loc: (string | number)[]) => ctx.checkModel(projectId, m, loc);
      return {
        ...generateSide([], range),
        ...(await resolveExperiment(ctx.db, projectId, name, body, models, parameters, check)),
      };
    },
  },
  reads: [],
  creates: [
    { permission: 'models:read', why: 'the run generates with models' },
    { permission: 'inference:write', why: 'the run calls models to generate' },
  ],
  generation: (side) =>
    isExperiment(side)
      ? experimentGeneration(side)
      : side.request && 'params' in side.request
        ? evalGeneration(side.request as unknown as GenerationRequest)
        : chat(storedParameters(side)),
  view: (side) => {
    const experiment = side.ref === null ? experimentView(side) : null;
    const parameters = experiment ? experiment.parameters : side.ref === null ? storedParameters(side) : null;
    return {
      type: TYPE,
      models: experiment?.models ?? side.models,
      range: formatRange(side.range),
      ...(experiment ? { prompts: experiment.prompts } : {}),
      ...(parameters ? { parameters } : {}),
    };
  },
};
