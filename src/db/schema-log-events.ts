/** A GenAI event received as an OTLP log record, kept for the span it names (JSON columns as text). */
export interface SpanLogEventTable {
  project_id: string;
  trace_id: string;
  span_id: string;
  /** Digest of the record (name, time, place in its request, attributes): a retry's copy has the same. */
  event_key: string;
  /** `gen_ai.user.message`, `gen_ai.choice`, … */
  name: string;
  /** ISO time of the record. */
  time: string;
  /** Its place among the span's records of one request (records of one instant keep their order). */
  ordinal: number;
  /** The record's attributes with its body's members, as the span-event mapping reads them. */
  attributes: string;
  received_at: string;
}
