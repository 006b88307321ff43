/**
 * The span, event and log attribute names of the model-call conventions the service reads and writes:
 * OpenTelemetry GenAI (`gen_ai.*`), OpenInference (`openinference.*`, `llm.*`), OpenLLMetry
 * (`llm.*`, `traceloop.*`) and the AI SDK (`ai.*`). Named once here (in src/shared, so that the trace
 * mapping, the gateway's telemetry and the stores can all take them without importing each other), as
 * the semantic conventions spell them; `ATTR_*` are attribute names, `EVENT_*` event names.
 */

// OpenTelemetry GenAI semantic conventions.
export const GEN_AI_PREFIX = 'gen_ai.';
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const ATTR_GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name';
/** The provider before semantic conventions 1.37 renamed it to gen_ai.provider.name. */
export const ATTR_GEN_AI_SYSTEM = 'gen_ai.system';
export const ATTR_GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id';
export const ATTR_GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
export const ATTR_GEN_AI_REQUEST_TEMPERATURE = 'gen_ai.request.temperature';
export const ATTR_GEN_AI_REQUEST_TOP_P = 'gen_ai.request.top_p';
export const ATTR_GEN_AI_REQUEST_MAX_TOKENS = 'gen_ai.request.max_tokens';
export const ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY = 'gen_ai.request.frequency_penalty';
export const ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY = 'gen_ai.request.presence_penalty';
export const ATTR_GEN_AI_REQUEST_SEED = 'gen_ai.request.seed';
export const ATTR_GEN_AI_REQUEST_STOP_SEQUENCES = 'gen_ai.request.stop_sequences';
export const ATTR_GEN_AI_RESPONSE_ID = 'gen_ai.response.id';
export const ATTR_GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model';
export const ATTR_GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons';
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
/** Older names of the usage counts (semantic conventions before 1.27, some emitters still). */
export const ATTR_GEN_AI_USAGE_PROMPT_TOKENS = 'gen_ai.usage.prompt_tokens';
export const ATTR_GEN_AI_USAGE_COMPLETION_TOKENS = 'gen_ai.usage.completion_tokens';
export const ATTR_GEN_AI_INPUT_MESSAGES = 'gen_ai.input.messages';
export const ATTR_GEN_AI_OUTPUT_MESSAGES = 'gen_ai.output.messages';
export const ATTR_GEN_AI_SYSTEM_INSTRUCTIONS = 'gen_ai.system_instructions';
export const ATTR_GEN_AI_TOOL_DEFINITIONS = 'gen_ai.tool.definitions';
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const ATTR_GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id';
export const ATTR_GEN_AI_TOOL_CALL_ARGUMENTS = 'gen_ai.tool.call.arguments';
export const ATTR_GEN_AI_TOOL_CALL_RESULT = 'gen_ai.tool.call.result';
export const ATTR_GEN_AI_EVALUATION_NAME = 'gen_ai.evaluation.name';
export const ATTR_GEN_AI_EVALUATION_SCORE_VALUE = 'gen_ai.evaluation.score.value';
export const ATTR_GEN_AI_EVALUATION_SCORE_LABEL = 'gen_ai.evaluation.score.label';
export const ATTR_GEN_AI_EVALUATION_EXPLANATION = 'gen_ai.evaluation.explanation';
/**
 * The messages of the oldest event form (`gen_ai.content.prompt` / `gen_ai.content.completion` events),
 * and OpenLLMetry's prefix of its flat messages (`gen_ai.prompt.{i}.role`, `gen_ai.completion.{i}.…`).
 */
export const ATTR_GEN_AI_PROMPT = 'gen_ai.prompt';
export const ATTR_GEN_AI_COMPLETION = 'gen_ai.completion';
/** An event's message as one JSON attribute (some emitters of the ≤ 1.36 events). */
export const ATTR_GEN_AI_EVENT_CONTENT = 'gen_ai.event.content';

export const EVENT_GEN_AI_SYSTEM_MESSAGE = 'gen_ai.system.message';
export const EVENT_GEN_AI_USER_MESSAGE = 'gen_ai.user.message';
export const EVENT_GEN_AI_ASSISTANT_MESSAGE = 'gen_ai.assistant.message';
export const EVENT_GEN_AI_TOOL_MESSAGE = 'gen_ai.tool.message';
export const EVENT_GEN_AI_CHOICE = 'gen_ai.choice';
export const EVENT_GEN_AI_CONTENT_PROMPT = 'gen_ai.content.prompt';
export const EVENT_GEN_AI_CONTENT_COMPLETION = 'gen_ai.content.completion';
export const EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS = 'gen_ai.client.inference.operation.details';
export const EVENT_GEN_AI_EVALUATION_RESULT = 'gen_ai.evaluation.result';

// OpenInference (Arize).
export const ATTR_OPENINFERENCE_SPAN_KIND = 'openinference.span.kind';
export const ATTR_LLM_MODEL_NAME = 'llm.model_name';
export const ATTR_LLM_PROVIDER = 'llm.provider';
export const ATTR_LLM_SYSTEM = 'llm.system';
/** Prefixes of the indexed messages, `llm.input_messages.{i}.message.role` and so on. */
export const ATTR_LLM_INPUT_MESSAGES = 'llm.input_messages';
export const ATTR_LLM_OUTPUT_MESSAGES = 'llm.output_messages';
export const ATTR_LLM_TOKEN_COUNT_PROMPT = 'llm.token_count.prompt';
export const ATTR_LLM_TOKEN_COUNT_COMPLETION = 'llm.token_count.completion';
/** The names under one indexed message (after `llm.input_messages.{i}.`). */
export const OI_MESSAGE_ROLE = 'message.role';
export const OI_MESSAGE_CONTENT = 'message.content';
export const OI_MESSAGE_CONTENTS = 'message.contents';
export const OI_MESSAGE_CONTENT_TYPE = 'message_content.type';
export const OI_MESSAGE_CONTENT_TEXT = 'message_content.text';
export const OI_MESSAGE_TOOL_CALLS = 'message.tool_calls';
export const OI_MESSAGE_TOOL_CALL_ID = 'message.tool_call_id';
export const OI_TOOL_CALL_ID = 'tool_call.id';
export const OI_TOOL_CALL_FUNCTION_NAME = 'tool_call.function.name';
export const OI_TOOL_CALL_FUNCTION_ARGUMENTS = 'tool_call.function.arguments';

// OpenLLMetry (Traceloop).
export const ATTR_LLM_REQUEST_TYPE = 'llm.request.type';
export const ATTR_LLM_USAGE_PROMPT_TOKENS = 'llm.usage.prompt_tokens';
export const ATTR_LLM_USAGE_COMPLETION_TOKENS = 'llm.usage.completion_tokens';
export const ATTR_TRACELOOP_SPAN_KIND = 'traceloop.span.kind';
export const ATTR_TRACELOOP_SESSION_ID = 'traceloop.association.properties.session_id';

// The AI SDK's experimental_telemetry.
export const ATTR_AI_OPERATION_ID = 'ai.operationId';
export const ATTR_AI_MODEL_ID = 'ai.model.id';
export const ATTR_AI_MODEL_PROVIDER = 'ai.model.provider';
export const ATTR_AI_PROMPT_MESSAGES = 'ai.prompt.messages';
export const ATTR_AI_RESPONSE_TEXT = 'ai.response.text';
export const ATTR_AI_RESPONSE_TOOL_CALLS = 'ai.response.toolCalls';
export const ATTR_AI_RESPONSE_MODEL = 'ai.response.model';
export const ATTR_AI_USAGE_INPUT_TOKENS = 'ai.usage.inputTokens';
export const ATTR_AI_USAGE_OUTPUT_TOKENS = 'ai.usage.outputTokens';
/** The usage names of AI SDK versions before 5. */
export const ATTR_AI_USAGE_PROMPT_TOKENS = 'ai.usage.promptTokens';
export const ATTR_AI_USAGE_COMPLETION_TOKENS = 'ai.usage.completionTokens';
export const ATTR_AI_TELEMETRY_SESSION_ID = 'ai.telemetry.metadata.sessionId';

// Shared by several.
export const ATTR_SESSION_ID = 'session.id';
