import { aiSdk } from './ai-sdk.js';
import { genAi } from './genai.js';
import { genAiAttributeContent } from './genai-attributes.js';
import { genAiEventContent } from './genai-events.js';
import { openInference } from './openinference.js';
import { openLlmetry, openLlmetryContent } from './openllmetry.js';
import type { CallContent, ContentReader, Convention, ModelCallFacts, SpanView } from './types.js';

/**
 * The conventions a span may follow, as a list of mappers tried by ascending priority (the shape of
 * Langfuse's ObservationTypeMapper registry): the first that applies maps the span. A new convention is
 * a module with a `Convention` and a line here.
 */
const byPriority = <T extends { priority: number }>(list: T[]): readonly T[] =>
  [...list].sort((x, y) => x.priority - y.priority);

export const CONVENTIONS: readonly Convention[] = byPriority([openInference, aiSdk, openLlmetry, genAi]);

/** The forms of content in GenAI-shaped attributes and events, merged for GenAI and OpenLLMetry calls. */
export const CONTENT_READERS: readonly ContentReader[] = byPriority([
  genAiAttributeContent,
  genAiEventContent,
  openLlmetryContent,
]);

/**
 * Who names a span's operation first: the standard's own `gen_ai.operation.name`, then OpenLLMetry's
 * `llm.request.type` / `traceloop.span.kind`, then OpenInference's span kind.
 */
const OPERATION_NAMERS: readonly Convention[] = [genAi, openLlmetry, openInference];

/** The first reader's content that recorded each side. */
export function mergedContent(span: SpanView): CallContent {
  const contents = CONTENT_READERS.map((r) => r.read(span));
  return {
    input: contents.find((c) => c.input !== null)?.input ?? null,
    output: contents.find((c) => c.output !== null)?.output ?? null,
  };
}

export function operationOf(span: SpanView): string | null {
  for (const c of OPERATION_NAMERS) {
    const operation = c.operation?.(span) ?? null;
    if (operation !== null) return operation;
  }
  return null;
}

/** The convention that maps a span: the first, by priority, that applies to it. */
export function conventionOf(span: SpanView): Convention {
  // genai applies to every span, so there always is one.
  return CONVENTIONS.find((c) => c.applies(span)) ?? genAi;
}

/** The model call a span is, read by its convention, or null when it is none. */
export function modelCallOf(span: SpanView, operation: string | null): ModelCallFacts | null {
  return conventionOf(span).map(span, { operation, mergedContent: () => mergedContent(span) });
}
