import { JUDGE_API_PROTOCOLS, type WireProtocol } from '../../shared/wire-protocol.js';
import type { ProviderAdapter } from '../providers/types.js';
import { CHAT } from './chat/index.js';
import { EMBEDDINGS } from './embeddings/index.js';
import { GEMINI } from './gemini/index.js';
import { MESSAGES } from './messages/index.js';
import { RESPONSES } from './responses/index.js';
import type { AnswerRules, GenAiOperation, WireDialect } from './types.js';

export type { AnswerRules, WireDialect } from './types.js';

/*
 * The wire dialects, one object each (`dialects/<name>/index.ts`). Every table of dialects (success rules,
 * native adapters, the gateway's error bodies and credential headers, span operations) is read from here;
 * a new dialect is its folder and one line below (its name in shared/wire-protocol.ts).
 */
export const DIALECTS = {
  chat: CHAT,
  responses: RESPONSES,
  messages: MESSAGES,
  embeddings: EMBEDDINGS,
  gemini: GEMINI,
} as const satisfies { readonly [P in WireProtocol]: WireDialect<P> };

const BY_NAME: ReadonlyMap<string, WireDialect> = new Map(Object.entries(DIALECTS));

/** The dialect a recorded call's `metadata.route` names (undefined: none, e.g. an ingested span's log). */
export function dialectNamed(name: unknown): WireDialect | undefined {
  return typeof name === 'string' ? BY_NAME.get(name) : undefined;
}

/** The dialect a judge evaluator's `api` (the contract's spelling) asks for; undefined: none or unknown. */
export function judgeDialect(api: string | null): WireDialect | undefined {
  return api !== null && Object.hasOwn(JUDGE_API_PROTOCOLS, api)
    ? DIALECTS[JUDGE_API_PROTOCOLS[api as keyof typeof JUDGE_API_PROTOCOLS]]
    : undefined;
}

/** The GenAI operation of a recorded call's route (`chat` when it names no dialect). */
export function operationOf(route: unknown): GenAiOperation {
  return dialectNamed(route)?.operation ?? CHAT.operation;
}

/** Per dialect, what a successful upstream answer is (the provider layer's and the cache's rule). */
export const ANSWER_RULES = Object.fromEntries(
  Object.values(DIALECTS).map((d) => [d.name, d.answerRules]),
) as Record<WireProtocol, AnswerRules>;

/** The adapter of a call made in a dialect the model's upstream speaks natively (`CallOptions.api`). */
export const NATIVE_ADAPTERS: Readonly<Partial<Record<WireProtocol, ProviderAdapter>>> = Object.fromEntries(
  Object.values(DIALECTS).flatMap((d: WireDialect) => (d.native ? [[d.name, d.native.adapter]] : [])),
);
