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

export interface Usage {
  input: number;
  output: number;
}

/** A span as the conventions see it. */
export interface SpanView {
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
