/** Parsing of judge replies. A reply that does not follow the contract is an error, never a guessed score. */

export const POINTWISE_SCHEMA = {
  type: 'object',
  properties: { score: { type: 'number' }, reasoning: { type: 'string' } },
  required: ['score', 'reasoning'],
  additionalProperties: false,
} as const;

export const PAIRWISE_SCHEMA = {
  type: 'object',
  properties: { winner: { type: 'string', enum: ['A', 'B', 'tie'] }, reasoning: { type: 'string' } },
  required: ['winner', 'reasoning'],
  additionalProperties: false,
} as const;

function objectOf(candidate: string | undefined): Record<string, unknown> | null {
  if (!candidate) return null;
  try {
    const v: unknown = JSON.parse(candidate);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function jsonObject(text: string): Record<string, unknown> | null {
  const trimmed = text.trim();
  // The reply as is (structured output), else a fenced block, else the outermost braces in prose.
  return (
    objectOf(trimmed) ??
    objectOf(/```(?:json)?\s*([\s\S]*?)```/i.exec(trimmed)?.[1]) ??
    objectOf(trimmed.slice(trimmed.indexOf('{'), trimmed.lastIndexOf('}') + 1))
  );
}

export function parsePointwise(text: string): { score: number; reasoning: string } | null {
  const v = jsonObject(text);
  if (!v) return null;
  const score = typeof v.score === 'string' && v.score.trim() !== '' ? Number(v.score) : v.score;
  if (typeof score !== 'number' || !Number.isFinite(score)) return null;
  return { score, reasoning: typeof v.reasoning === 'string' ? v.reasoning : '' };
}

export type Winner = 'A' | 'B' | 'tie';

export function parsePairwise(text: string): { winner: Winner; reasoning: string } | null {
  const v = jsonObject(text);
  if (!v || typeof v.winner !== 'string') return null;
  const w = v.winner.trim().toUpperCase();
  const winner: Winner | null = w === 'A' ? 'A' : w === 'B' ? 'B' : w === 'TIE' ? 'tie' : null;
  if (!winner) return null;
  return { winner, reasoning: typeof v.reasoning === 'string' ? v.reasoning : '' };
}
