import {
  ATTR_AI_TELEMETRY_SESSION_ID,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_SESSION_ID,
  ATTR_TRACELOOP_SESSION_ID,
} from '../../shared/genai-attributes.js';
import { firstStr } from './read.js';
import { modelCallOf, operationOf } from './registry.js';
import type { SpanFacts, SpanView } from './types.js';

export type {
  Attributes,
  CallContent,
  ChatMessage,
  JsonValue,
  ModelCallFacts,
  SpanFacts,
  SpanView,
  ToolCall,
} from './types.js';

/** Where the conventions keep a conversation's id, the standard's first. */
const SESSION_KEYS = [
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_SESSION_ID,
  ATTR_AI_TELEMETRY_SESSION_ID,
  ATTR_TRACELOOP_SESSION_ID,
];

/** What the conventions say of a span: its operation, its session, and the model call it is, if one. */
export function spanFacts(span: SpanView): SpanFacts {
  const operation = operationOf(span);
  const call = modelCallOf(span, operation);
  const sessionId = firstStr(span.attributes, ...SESSION_KEYS);
  return { operation: call && operation === null ? 'chat' : operation, sessionId, call };
}
