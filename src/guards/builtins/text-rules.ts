import { francAll } from 'franc-min';
import { RE2JS } from 're2js';
import { PASSED, replaceFindings, scan, type TextGuard } from './types.js';

/*
 * Guards on words and shapes of a text: deny lists, user regular expressions (RE2: linear time, so a
 * pattern like `(a+)+$` cannot stall the process), prompt-injection phrases, language and length.
 */

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Terms matched case-insensitively where they stand as words (not inside a longer word). */
export function denyListGuard(config: { terms: string[] }): TextGuard {
  const alternatives = config.terms
    .map((t) => t.trim())
    .filter((t) => t.length > 0)
    .sort((a, b) => b.length - a.length)
    .map((t) => t.split(/\s+/).map(escapeRegex).join('\\s+'));
  const re = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${alternatives.join('|')})(?![\\p{L}\\p{N}_])`, 'giu');
  const find = (text: string) => scan(text, re, 'DENIED', () => true);
  return {
    prefix: true,
    check(text) {
      const n = find(text).length;
      return n === 0 ? PASSED : { triggered: true, score: 0, reason: `denied term x${n}` };
    },
    redact: (text) => replaceFindings(text, find(text)),
  };
}

/** Compiles a user's pattern, or says why it cannot be (a syntax error, a construct RE2 refuses). */
export function compileRegex(pattern: string, caseInsensitive: boolean): RE2JS | string {
  try {
    return RE2JS.compile(pattern, caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0);
  } catch (err) {
    return err instanceof Error ? err.message : 'invalid regular expression';
  }
}

export function regexGuard(config: {
  pattern: string;
  case_insensitive?: boolean;
  replacement?: string;
}): TextGuard {
  const re = compileRegex(config.pattern, config.case_insensitive === true);
  if (typeof re === 'string') throw new Error(re);
  const replacement = RE2JS.quoteReplacement(config.replacement ?? '[REDACTED]');
  return {
    prefix: true,
    check(text) {
      return re.matcher(text).find() ? { triggered: true, score: 0, reason: 'pattern matched' } : PASSED;
    },
    redact: (text) => re.matcher(text).replaceAll(replacement),
  };
}

/** Phrases of prompt injection, each with its weight; a text's score is 1 - Π(1 - weight) of those found. */
const INJECTION: [RegExp, number][] = [
  [
    /\b(?:ignore|disregard|skip|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|former)\s+(?:instructions?|prompts?|rules|directions|guidelines|messages?)/i,
    0.7,
  ],
  [/\bforget\s+(?:everything|all|your|the)\s+(?:\w+\s+){0,2}(?:instructions?|rules|told|said|above)/i, 0.5],
  [
    /\b(?:reveal|show|print|repeat|output|display|tell\s+me|leak)\s+(?:me\s+)?(?:your|the)\s+(?:\w+\s+)?(?:system|hidden|initial|original|secret)\s+(?:prompt|instructions?|message)/i,
    0.6,
  ],
  [/\bwhat\s+(?:is|are|was|were)\s+your\s+(?:system|initial|original)\s+(?:prompt|instructions?)/i, 0.5],
  [/\byou\s+are\s+now\s+(?:DAN|in\s+developer\s+mode|unrestricted|unfiltered|jailbroken|free)/i, 0.6],
  [
    /\b(?:act|pretend|behave)\s+as\s+(?:if\s+you\s+(?:are|were|have)\s+|an?\s+)?(?:unrestricted|unfiltered|jailbroken|evil|no\s+rules)/i,
    0.4,
  ],
  [/\bdo\s+anything\s+now\b/i, 0.4],
  [/\bdeveloper\s+mode\s+(?:enabled|on|activated)/i, 0.4],
  [
    /\boverride\s+(?:your|the|all)\s+(?:safety|system|previous|content)\s+(?:\w+\s+)?(?:rules|instructions|policy|policies|filters?)/i,
    0.5,
  ],
  [/\bnew\s+(?:system\s+)?instructions\s*:/i, 0.3],
  [/<\|im_start\|>\s*system|\[\/?(?:SYSTEM|INST)\]|#{2,}\s*system\s*(?:prompt)?\s*:/i, 0.3],
];

export function injectionScore(text: string): { score: number; hits: number } {
  let keep = 1;
  let hits = 0;
  for (const [re, weight] of INJECTION) {
    if (re.test(text)) {
      keep *= 1 - weight;
      hits++;
    }
  }
  return { score: 1 - keep, hits };
}

export function injectionGuard(config: { threshold?: number }): TextGuard {
  const threshold = config.threshold ?? 0.5;
  return {
    prefix: true,
    check(text) {
      const { score, hits } = injectionScore(text);
      const rounded = Math.round(score * 1000) / 1000;
      return {
        triggered: score >= threshold && hits > 0,
        score: Math.round((1 - score) * 1000) / 1000,
        reason: hits ? `injection score ${rounded} (${hits} phrase${hits > 1 ? 's' : ''})` : null,
      };
    },
  };
}

/** Language detection reads at most this much of a text (trigram statistics settle well before). */
const LANGUAGE_SAMPLE = 4000;

export function languageGuard(config: { allowed: string[]; min_chars?: number }): TextGuard {
  const allowed = new Set(config.allowed);
  const minLength = config.min_chars ?? 20;
  return {
    prefix: false,
    check(text) {
      const sample = text.slice(0, LANGUAGE_SAMPLE);
      if (sample.trim().length < minLength) return PASSED;
      const [best] = francAll(sample, { minLength });
      if (!best || best[0] === 'und' || allowed.has(best[0])) return PASSED;
      return { triggered: true, score: 0, reason: `language '${best[0]}' is not allowed` };
    },
  };
}

export function lengthGuard(config: {
  min_chars?: number;
  max_chars?: number;
  min_tokens?: number;
  max_tokens?: number;
}): TextGuard {
  return {
    // Only a maximum holds of a prefix; `check` on a prefix is still right for it (a minimum waits for the end).
    prefix: config.min_chars === undefined && config.min_tokens === undefined,
    check(text) {
      const chars = text.length;
      const tokens = Math.ceil(chars / 4);
      const why =
        config.max_chars !== undefined && chars > config.max_chars
          ? `${chars} characters > ${config.max_chars}`
          : config.min_chars !== undefined && chars < config.min_chars
            ? `${chars} characters < ${config.min_chars}`
            : config.max_tokens !== undefined && tokens > config.max_tokens
              ? `about ${tokens} tokens > ${config.max_tokens}`
              : config.min_tokens !== undefined && tokens < config.min_tokens
                ? `about ${tokens} tokens < ${config.min_tokens}`
                : null;
      return why === null ? PASSED : { triggered: true, score: 0, reason: why };
    },
  };
}
