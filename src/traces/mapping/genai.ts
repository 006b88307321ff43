import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM,
  ATTR_GEN_AI_USAGE_COMPLETION_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_GEN_AI_USAGE_PROMPT_TOKENS,
  ATTR_LLM_USAGE_COMPLETION_TOKENS,
  ATTR_LLM_USAGE_PROMPT_TOKENS,
} from '../../shared/genai-attributes.js';
import { firstNum, firstStr } from './read.js';
import type { Convention, MappingContext, ModelCallFacts, SpanView } from './types.js';

/**
 * OpenTelemetry's GenAI semantic conventions: `gen_ai.operation.name`, `gen_ai.request.model`,
 * `gen_ai.provider.name` (`gen_ai.system` before 1.37), `gen_ai.usage.*`; the messages in the ≥ 1.37
 * attributes or the ≤ 1.36 events (read by the content readers, merged). The fallback: it applies to
 * every span no other convention claims.
 */

/** Operations of the GenAI conventions (and OpenLLMetry's `llm.request.type`) that are a call to a model. */
const MODEL_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content', 'completion']);

/** A model call in GenAI's attributes (OpenLLMetry shares them), or null when the span is none. */
export function genAiFacts(
  convention: string,
  span: SpanView,
  context: MappingContext,
): ModelCallFacts | null {
  const a = span.attributes;
  const requestModel = firstStr(a, ATTR_GEN_AI_REQUEST_MODEL);
  const { operation } = context;
  if (operation !== null ? !MODEL_OPERATIONS.has(operation) : requestModel === null) return null;
  return {
    convention,
    provider: firstStr(a, ATTR_GEN_AI_PROVIDER_NAME, ATTR_GEN_AI_SYSTEM),
    requestModel,
    responseModel: firstStr(a, ATTR_GEN_AI_RESPONSE_MODEL),
    usage: {
      input: firstNum(
        a,
        ATTR_GEN_AI_USAGE_INPUT_TOKENS,
        ATTR_GEN_AI_USAGE_PROMPT_TOKENS,
        ATTR_LLM_USAGE_PROMPT_TOKENS,
      ),
      output: firstNum(
        a,
        ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
        ATTR_GEN_AI_USAGE_COMPLETION_TOKENS,
        ATTR_LLM_USAGE_COMPLETION_TOKENS,
      ),
    },
    content: context.mergedContent(),
  };
}

export const genAi: Convention = {
  name: 'genai',
  priority: 100,
  applies: () => true,
  operation: (span) => firstStr(span.attributes, ATTR_GEN_AI_OPERATION_NAME),
  map: (span, context) => genAiFacts('genai', span, context),
};
