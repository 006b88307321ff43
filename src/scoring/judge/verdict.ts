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

function jsonObject(text: string): Record<string, unknown> | null {
  const trimmed = text.trim();
  // Tolerate a fenced block or prose around one JSON object.
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(trimmed)?.[1];
  const candidates = [trimmed, fenced, trimmed.slice(trimmed.indexOf('{'), trimmed.lastIndexOf('}') + 1)];
  for (const c of candidates) {
    if (!c) continue;
    try {
      const v: unknown = JSON.parse(c);
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      // next candidate
    }
  }
  return null;
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
