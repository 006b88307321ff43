/** A JSON value (what OTLP attribute values become). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A span's attributes (or an event's), OTLP values as JSON values. */
export type Attributes = Record<string, JsonValue>;

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A message in the chat-completion shape that task logs keep as their input. */
export interface ChatMessage {
  role: string;
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** What one convention read of a model call's content; null members: that convention recorded none. */
export interface CallContent {
  input: ChatMessage[] | null;
  output: { text: string | null; toolCalls: ToolCall[] } | null;
}

/** Token counts; null where the emitter recorded none (unknown, not zero). */
export interface Usage {
  input: number | null;
  output: number | null;
}

/** A span as the conventions see it. */
export interface SpanView {
  /** The span's id (hex); names the tool calls an emitter recorded without an id. */
  spanId?: string;
  name: string;
  attributes: Attributes;
  events: { name: string; attributes: Attributes }[];
}

/** What the mapping reads of a span. */
export interface SpanFacts {
  /** gen_ai.operation.name or its equivalent (chat, invoke_agent, execute_tool, embeddings, …). */
  operation: string | null;
  sessionId: string | null;
  /** Set when the span is a model call. */
  call: ModelCallFacts | null;
}

export interface ModelCallFacts {
  /** Which convention recognised it (genai, openinference, ai-sdk, openllmetry). */
  convention: string;
  provider: string | null;
  requestModel: string | null;
  responseModel: string | null;
  usage: Usage;
  content: CallContent;
}

/** What a convention is handed besides the span. */
export interface MappingContext {
  /** The span's operation (gen_ai.operation.name or its equivalent), null when none names it. */
  operation: string | null;
  /** The content the GenAI-shaped readers (attributes, events, OpenLLMetry's flat form) found, merged. */
  mergedContent(): CallContent;
}

/**
 * One convention of model-call spans. The registry tries them by ascending priority; the first whose
 * `applies` holds maps the span (and its null means: no model call), the rest are not asked.
 */
export interface Convention {
  /** Recorded as the call's convention (genai, openinference, ai-sdk, openllmetry). */
  name: string;
  priority: number;
  applies(span: SpanView): boolean;
  map(span: SpanView, context: MappingContext): ModelCallFacts | null;
  /** The operation the convention names on a span, null when it names none. */
  operation?(span: SpanView): string | null;
}

/** One form of message content in GenAI-shaped attributes or events; merged by ascending priority. */
export interface ContentReader {
  name: string;
  priority: number;
  read(span: SpanView): CallContent;
}
