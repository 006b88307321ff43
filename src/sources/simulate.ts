import type { GenerateSide } from '../engine/plan.js';
import { formatRange } from '../engine/plan.js';
import type { Generation } from '../engine/positions.js';
import { keptConversation, type SimulateSettings, simulate } from './simulate-talk.js';
import type { SideBody, SourceKind } from './types.js';

const TYPE = 'simulate';
/** User messages per conversation when the request gives no `max_turns`. */
export const DEFAULT_MAX_TURNS = 5;
const MAX_TURNS_LIMIT = 50;

/** The settings a planned simulate side stores (its `request`). */
function settingsOf(side: GenerateSide): SimulateSettings {
  const r = side.request ?? {};
  return {
    userModel: String(r.user_model ?? ''),
    maxTurns: typeof r.max_turns === 'number' ? r.max_turns : DEFAULT_MAX_TURNS,
    tools: r.tools === 'none' ? 'none' : 'from_row',
  };
}

function generation(side: GenerateSide): Generation {
  const settings = settingsOf(side);
  return {
    request: () => {
      throw new Error('a simulate side converses');
    },
    keep: (result) => result.text,
    converse: (item, model, io) => simulate(settings, item, model, io),
    output: (kept) => keptConversation(kept)?.final_output ?? kept,
    session: (kept) => {
      const conversation = keptConversation(kept);
      return conversation ? { id: conversation.session_id, values: conversation.session } : undefined;
    },
  };
}

const isTurns = (v: unknown) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_TURNS_LIMIT;

/**
 * Simulated conversations: for each row of the other side (a dataset of scenarios), a simulated user
 * (`user_model`, given the row's persona and goal) talks with each target model (`models`, one launch
 * each) for up to `max_turns` user messages or until it says the goal is met. The target may call the
 * tools the row declares, answered from the row's fixtures. Each conversation is stored as a session
 * of the run's container and scored as one (evaluators see its turns and tool calls).
 */
export const simulateSource: SourceKind = {
  type: TYPE,
  request: {
    fields: ['models', 'user_model'],
    optional: ['max_turns', 'tools'],
    generates: true,
    issues(name, body: SideBody) {
      const issues: { loc: (string | number)[]; msg: string; type: string }[] = [];
      if (name === 'baseline') {
        issues.push({
          loc: ['body', name, 'type'],
          msg: 'A baseline cannot be simulated: simulate the sample or the ground truth',
          type: 'value_error',
        });
      }
      if (body.max_turns !== undefined && !isTurns(body.max_turns)) {
        issues.push({
          loc: ['body', name, 'max_turns'],
          msg: `max_turns must be an integer from 1 to ${MAX_TURNS_LIMIT}`,
          type: 'value_error',
        });
      }
      if (body.tools !== undefined && body.tools !== 'from_row' && body.tools !== 'none') {
        issues.push({ loc: ['body', name, 'tools'], msg: 'tools must be from_row or none', type: 'enum' });
      }
      return issues;
    },
    async resolve(ctx, { projectId, name, body, range }) {
      const models = Array.isArray(body.models) ? body.models.map(String) : [];
      const userModel = String(body.user_model ?? '');
      await Promise.all([
        ...models.map((m, i) => ctx.checkModel(projectId, m, ['body', name, 'models', i])),
        ctx.checkModel(projectId, userModel, ['body', name, 'user_model']),
      ]);
      const side: GenerateSide = {
        type: TYPE,
        ref: null,
        models,
        range,
        request: {
          user_model: userModel,
          max_turns: isTurns(body.max_turns) ? body.max_turns : DEFAULT_MAX_TURNS,
          tools: body.tools === 'none' ? 'none' : 'from_row',
        },
      };
      return side;
    },
  },
  reads: [],
  creates: [
    { permission: 'models:read', why: 'the run simulates conversations with models' },
    { permission: 'inference:write', why: 'the run calls models to simulate conversations' },
  ],
  generation,
  view: (side) => {
    const s = settingsOf(side as GenerateSide);
    return {
      type: TYPE,
      models: side.models,
      user_model: s.userModel,
      max_turns: s.maxTurns,
      tools: s.tools,
      range: formatRange(side.range),
    };
  },
  // Each position is a conversation recorded as a session.
  itemPage: 'sessions',
};
