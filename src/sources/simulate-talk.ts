import type { Item, SessionValues } from '../catalog/items.js';
import type {
  Conversation,
  ConversationIO,
  StoredConversation,
  TargetCall,
} from '../engine/conversation-types.js';
import type { ChatMessage, ChatRequest, CompletionResult } from '../llm/types.js';
import { conversationText, type SessionLog, trajectoryText, transcriptOf } from '../sessions/transcript.js';
import { nowIso } from '../shared/ids.js';
import { isObject, parseJson } from '../shared/json.js';

/**
 * One simulated conversation: a simulated user (a model given the row's persona and goal) talks with the
 * target model, turn by turn, for up to `maxTurns` user messages or until the simulated user says the goal
 * is met (`GOAL_MET_TOKEN` in its reply). The target may call the tools the row declares; their results
 * come from the row's fixtures. Every call goes through `io` (paid, recorded, replayed on a redo).
 */

/** A simulated user's reply containing this ends the conversation: the goal is met. */
export const GOAL_MET_TOKEN = '[GOAL_MET]';
/** Target calls per user turn at most (a target that keeps calling tools is cut off there). */
export const MAX_TOOL_ROUNDS = 8;

/** The side's settings (the request's `user_model`, `max_turns`, `tools`). */
export interface SimulateSettings {
  userModel: string;
  maxTurns: number;
  tools: 'from_row' | 'none';
}

/** What a dataset row gives a simulated conversation (its `input`). */
interface Scenario {
  persona: string;
  goal: string;
  firstMessage: string | null;
  system: string | null;
  tools: unknown[];
  toolResults: Record<string, unknown>;
}

function scenarioOf(input: unknown): Scenario {
  if (typeof input === 'string') {
    return { persona: '', goal: input, firstMessage: null, system: null, tools: [], toolResults: {} };
  }
  const o = isObject(input) ? input : {};
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
  return {
    persona: str(o.persona) ?? '',
    goal: str(o.goal) ?? JSON.stringify(input ?? null),
    firstMessage: str(o.first_message),
    system: str(o.system),
    tools: Array.isArray(o.tools) ? o.tools : [],
    toolResults: isObject(o.tool_results) ? o.tool_results : {},
  };
}

/** The simulated user's instructions. */
export function userPrompt(s: Pick<Scenario, 'persona' | 'goal'>): string {
  return [
    'You are role-playing a user talking to an AI assistant. Stay in character; write only your next message.',
    s.persona ? `Persona: ${s.persona}` : '',
    `Your goal: ${s.goal}`,
    `When the assistant has fully met your goal, reply with exactly ${GOAL_MET_TOKEN} and nothing else.`,
  ]
    .filter(Boolean)
    .join('\n');
}

const OPENING = 'Write your first message to the assistant.';

/** The tool's fixture for its nth call: a list gives its items in turn (the last one repeated). */
function toolResult(results: Record<string, unknown>, name: string, nth: number): string {
  if (!(name in results)) return JSON.stringify({ error: `no result for tool '${name}' in the row` });
  const value = results[name];
  const picked = Array.isArray(value) ? value[Math.min(nth, value.length - 1)] : value;
  return typeof picked === 'string' ? picked : JSON.stringify(picked ?? null);
}

interface AssistantMessage {
  content: string | null;
  toolCalls: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
}

function assistantOf(result: CompletionResult): AssistantMessage {
  const choices = Array.isArray(result.body.choices) ? result.body.choices : [];
  const message = isObject(choices[0]) && isObject(choices[0].message) ? choices[0].message : {};
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const toolCalls = calls.filter(isObject).map((c, i) => {
    const fn = isObject(c.function) ? c.function : {};
    const args = fn.arguments;
    return {
      id: typeof c.id === 'string' ? c.id : `call_${i}`,
      type: 'function' as const,
      function: {
        name: typeof fn.name === 'string' ? fn.name : '',
        arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
      },
    };
  });
  const content = typeof message.content === 'string' ? message.content : result.text || null;
  return { content, toolCalls };
}

/** Why a conversation ended. */
export type StopReason = 'goal_met' | 'max_turns' | 'user_silent';

/** What a simulated conversation's generation row keeps. */
export interface KeptConversation {
  session_id: string | null;
  stop: StopReason;
  turns: number;
  final_output: string;
  messages: ChatMessage[];
  session: SessionValues;
}

function sessionValues(calls: TargetCall[], stored: StoredConversation): SessionValues {
  const logs: SessionLog[] = calls.map((c, i) => ({
    id: stored.logIds[i] ?? `call_${i}`,
    model: c.result.servedBy,
    input: c.request.messages,
    response: c.result.body,
    output: c.result.text,
    status: 'success',
    error: null,
    usage: c.result.usage,
    cost: c.result.cost,
    latency_ms: c.result.latencyMs,
    created_at: c.at,
  }));
  const t = transcriptOf(logs);
  const firstInput = t.turns[0]?.input.find((m) => m.role === 'user')?.content ?? '';
  const finalOutput = t.turns[t.turns.length - 1]?.output.content ?? '';
  return {
    conversation: conversationText(t),
    trajectory: trajectoryText(t),
    final_output: finalOutput,
    first_input: firstInput,
    turns: t.turns,
    tool_calls: t.tool_calls,
  };
}

/** Runs one row's conversation with the target `model`. */
export async function simulate(
  settings: SimulateSettings,
  item: Item,
  model: string,
  io: ConversationIO,
): Promise<Conversation> {
  const scenario = scenarioOf(item.input);
  const messages: ChatMessage[] = scenario.system ? [{ role: 'system', content: scenario.system }] : [];
  /** The conversation as the simulated user sees it: its own messages are the assistant's. */
  const userView: ChatMessage[] = [{ role: 'system', content: userPrompt(scenario) }];
  const tools = settings.tools === 'from_row' && scenario.tools.length > 0 ? scenario.tools : null;
  const targetCalls: TargetCall[] = [];
  const toolUses = new Map<string, number>();
  let stop: StopReason = 'max_turns';
  let turns = 0;
  let finalOutput = '';
  while (turns < settings.maxTurns) {
    let said: string;
    if (turns === 0 && scenario.firstMessage !== null) said = scenario.firstMessage;
    else {
      const asked: ChatMessage[] =
        userView.length === 1 ? [...userView, { role: 'user', content: OPENING }] : userView;
      const request: ChatRequest = { model: settings.userModel, messages: asked, stream: false };
      said = (await io.call('user', settings.userModel, request)).text.trim();
      if (said.includes(GOAL_MET_TOKEN)) {
        stop = 'goal_met';
        break;
      }
      if (said === '') {
        stop = 'user_silent';
        break;
      }
    }
    turns++;
    messages.push({ role: 'user', content: said });
    userView.push({ role: 'assistant', content: said });
    for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
      const request: ChatRequest = { model, messages: [...messages], stream: false };
      if (tools) request.tools = tools;
      const result = await io.call('target', model, request);
      targetCalls.push({ request, result, at: nowIso() });
      const answer = assistantOf(result);
      const message: ChatMessage = { role: 'assistant', content: answer.content };
      if (answer.toolCalls.length > 0) message.tool_calls = answer.toolCalls;
      messages.push(message);
      if (answer.toolCalls.length === 0) {
        finalOutput = answer.content ?? '';
        userView.push({ role: 'user', content: finalOutput });
        break;
      }
      for (const call of answer.toolCalls) {
        const nth = toolUses.get(call.function.name) ?? 0;
        toolUses.set(call.function.name, nth + 1);
        const content = toolResult(scenario.toolResults, call.function.name, nth);
        messages.push({ role: 'tool', tool_call_id: call.id, content });
      }
    }
  }
  const ended: StopReason = stop;
  return {
    targetCalls,
    keep: (stored) =>
      JSON.stringify({
        session_id: stored.sessionId,
        stop: ended,
        turns,
        final_output: finalOutput,
        messages,
        session: sessionValues(targetCalls, stored),
      } satisfies KeptConversation),
  };
}

/** A kept conversation (a generation row's output) read back; null when it is not one. */
export function keptConversation(kept: string): KeptConversation | null {
  const value = parseJson<unknown>(kept, null);
  return isObject(value) && isObject(value.session) ? (value as unknown as KeptConversation) : null;
}
