import type { SECRET_KINDS } from '../schemas.js';
import { type Finding, findingGuard, scan, type TextGuard } from './types.js';

type SecretKind = (typeof SECRET_KINDS)[number];

/** Bits per character of a string's own symbol frequencies (Shannon entropy). */
export function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** Credential shapes of the common providers; fixed patterns, each linear in the text. */
const PATTERNS: Record<SecretKind, { re: RegExp; valid?: (m: string) => boolean }> = {
  openai: { re: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,200}/g },
  anthropic: { re: /\bsk-ant-[A-Za-z0-9_-]{20,200}/g },
  aws_access_key: { re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  github: { re: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})/g },
  slack: { re: /\bxox[abposr]-[A-Za-z0-9-]{10,200}/g },
  private_key: {
    re: /-----BEGIN (?:[A-Z]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,20000}?-----END (?:[A-Z]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----/g,
  },
  // A bearer token of at least 20 characters that looks random (not a word or a placeholder).
  bearer: {
    re: /\bBearer\s+[A-Za-z0-9._~+/=-]{20,500}/g,
    valid: (m) => entropy(m.replace(/^Bearer\s+/, '')) >= 3.5,
  },
};

export function secretsGuard(config: { kinds?: SecretKind[] }): TextGuard {
  const kinds = config.kinds ?? (Object.keys(PATTERNS) as SecretKind[]);
  return findingGuard((text) => {
    const found: Finding[] = [];
    for (const kind of kinds) {
      const { re, valid } = PATTERNS[kind];
      found.push(...scan(text, re, 'SECRET', valid ?? (() => true)));
    }
    return found;
  });
}
