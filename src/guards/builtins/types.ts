/** What one check says of one text. */
export interface CheckVerdict {
  /** The check found what it looks for (its action applies). */
  triggered: boolean;
  /** 1: nothing found; 0: triggered; in between for graded checks (prompt injection, evaluators). */
  score: number;
  /** Why, in a few words (what was found, never the text itself). */
  reason: string | null;
  /** A model call the check made (an evaluator's judge), paid by the call's payer. */
  cost?: number;
}

/** A span of a text a check found (what redaction replaces), with its label (`EMAIL`). */
export interface Finding {
  start: number;
  end: number;
  label: string;
}

/**
 * A built-in guard compiled once from its configuration. `check` is synchronous and bounded (linear in
 * the text, which the caller caps); `redact` is there when the guard can say what to replace.
 */
export interface TextGuard {
  check(text: string): CheckVerdict;
  redact?(text: string): string;
  /** Whether a finding in a prefix of a text stays a finding (incremental checks on streams). */
  prefix: boolean;
}

export const PASSED: CheckVerdict = Object.freeze({ triggered: false, score: 1, reason: null });

/** Replaces each finding by `[LABEL]` (findings sorted, overlapping ones dropped). */
export function replaceFindings(text: string, findings: Finding[], label?: string): string {
  if (findings.length === 0) return text;
  const sorted = [...findings].sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const f of sorted) {
    if (f.start < at) continue;
    out += `${text.slice(at, f.start)}${label ?? `[${f.label}]`}`;
    at = f.end;
  }
  return out + text.slice(at);
}

/** A verdict from findings: the kinds found and how many, never the values. */
export function verdictOf(findings: Finding[]): CheckVerdict {
  if (findings.length === 0) return PASSED;
  const counts = new Map<string, number>();
  for (const f of findings) counts.set(f.label, (counts.get(f.label) ?? 0) + 1);
  const found = [...counts].map(([label, n]) => `${label.toLowerCase()} x${n}`).join(', ');
  return { triggered: true, score: 0, reason: `found ${found}` };
}

/** Every match of a global regular expression of fixed, linear-cost shape, kept when `valid` says so. */
export function scan(text: string, re: RegExp, label: string, valid: (m: string) => boolean): Finding[] {
  const out: Finding[] = [];
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (valid(m[0])) out.push({ start: m.index, end: m.index + m[0].length, label });
    if (m[0].length === 0) re.lastIndex++;
  }
  return out;
}

/** A guard that finds spans: judged by whether any is found, redacted by replacing them. */
export function findingGuard(find: (text: string) => Finding[], replacement?: string): TextGuard {
  return {
    prefix: true,
    check: (text) => verdictOf(find(text)),
    redact: (text) => replaceFindings(text, find(text), replacement),
  };
}
