import { aiSdkCall } from './ai-sdk.js';
import { genAiAttributeContent } from './genai-attributes.js';
import { genAiEventContent } from './genai-events.js';
import { OPENINFERENCE_KINDS, openInferenceCall } from './openinference.js';
import { openLlmetryContent } from './openllmetry.js';
import { firstNum, firstStr, str } from './read.js';
import type { CallContent, ModelCallFacts, SpanFacts, SpanView } from './types.js';

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

/** Operations of the GenAI conventions (and OpenLLMetry's `llm.request.type`) that are a call to a model. */
const MODEL_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content', 'completion']);

/** The first convention's content that recorded each side. */
function merged(...contents: CallContent[]): CallContent {
  return {
    input: contents.find((c) => c.input !== null)?.input ?? null,
    output: contents.find((c) => c.output !== null)?.output ?? null,
  };
}

function genAiCall(span: SpanView, operation: string | null): ModelCallFacts | null {
  const a = span.attributes;
  const requestModel = firstStr(a, 'gen_ai.request.model');
  if (operation !== null ? !MODEL_OPERATIONS.has(operation) : requestModel === null) return null;
  return {
    convention:
      a['gen_ai.prompt.0.role'] !== undefined || a['llm.request.type'] !== undefined
        ? 'openllmetry'
        : 'genai',
    provider: firstStr(a, 'gen_ai.provider.name', 'gen_ai.system'),
    requestModel,
    responseModel: firstStr(a, 'gen_ai.response.model'),
    usage: {
      input:
        firstNum(a, 'gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'llm.usage.prompt_tokens') ??
        0,
      output:
        firstNum(
          a,
          'gen_ai.usage.output_tokens',
          'gen_ai.usage.completion_tokens',
          'llm.usage.completion_tokens',
        ) ?? 0,
    },
    content: merged(genAiAttributeContent(a), genAiEventContent(span), openLlmetryContent(a)),
  };
}

function operationOf(span: SpanView): string | null {
  const a = span.attributes;
  const named = firstStr(a, 'gen_ai.operation.name', 'llm.request.type');
  if (named !== null) return named;
  const oi = str(a['openinference.span.kind'])?.toUpperCase();
  if (oi !== undefined) return OPENINFERENCE_KINDS[oi] ?? oi.toLowerCase();
  const tl = firstStr(a, 'traceloop.span.kind');
  if (tl === 'tool') return 'execute_tool';
  if (tl === 'agent') return 'invoke_agent';
  return tl;
}

/** What the conventions say of a span: its operation, its session, and the model call it is, if one. */
export function spanFacts(span: SpanView): SpanFacts {
  const a = span.attributes;
  const operation = operationOf(span);
  const call =
    a['openinference.span.kind'] !== undefined
      ? openInferenceCall(a)
      : a['ai.operationId'] !== undefined
        ? aiSdkCall(a)
        : genAiCall(span, operation);
  const sessionId = firstStr(
    a,
    'gen_ai.conversation.id',
    'session.id',
    'ai.telemetry.metadata.sessionId',
    'traceloop.association.properties.session_id',
  );
  return { operation: call && operation === null ? 'chat' : operation, sessionId, call };
}
