/**
 * The one template engine of prompts and grader templates. A template is split once into its text and
 * its `{{references}}` (compiled templates are kept, as runs render the same few at every position);
 * a vocabulary says what a reference looks like, how it is read once, and how it is written at given
 * values. Two vocabularies use it: judge prompts (judge/template.ts: `{{input}}`, `{{metadata.key}}`,
 * lenient) and OpenAI-style graders (graders/template.ts: `{{item.x}}`, `{{sample.output_json.a[0]}}`,
 * strict: a reference that does not resolve is an error).
 */
export interface Vocabulary<V, P> {
  /** What a reference looks like: a global pattern whose first group is the reference. */
  readonly pattern: RegExp;
  /** A reference as read once, when its template is compiled. */
  parse(reference: string): P;
  /** The reference's text at `values` (a strict vocabulary throws when it does not resolve). */
  write(parsed: P, values: V, reference: string): string;
}

export type Compiled<V> = (values: V) => string;

/** A template split into texts and references: `texts[i]`, then reference `i`, …, then `tail`. */
interface Split {
  texts: string[];
  references: string[];
  tail: string;
}

function split(template: string, pattern: RegExp): Split {
  const texts: string[] = [];
  const references: string[] = [];
  let last = 0;
  for (const m of template.matchAll(pattern)) {
    texts.push(template.slice(last, m.index));
    references.push(m[1] ?? '');
    last = m.index + m[0].length;
  }
  return { texts, references, tail: template.slice(last) };
}

/** `template` compiled for `vocabulary`: `compile(t, v)(values)` writes every reference at values, in order. */
export function compile<V, P>(template: string, vocabulary: Vocabulary<V, P>): Compiled<V> {
  const { texts, references, tail } = split(template, vocabulary.pattern);
  const parsed = references.map((r) => vocabulary.parse(r));
  return (values) => {
    let out = '';
    for (let i = 0; i < parsed.length; i++) {
      out += texts[i] + vocabulary.write(parsed[i] as P, values, references[i] ?? '');
    }
    return out + tail;
  };
}

/** The references a template makes (trimmed), in order, e.g. to validate them before any item is seen. */
export function referencesIn(template: string, pattern: RegExp): string[] {
  return split(template, pattern).references.map((r) => r.trim());
}

/** Compiled templates of one vocabulary, kept while few: runs ask for the same templates at every position. */
export class TemplateCache<V, P> {
  private readonly compiled = new Map<string, Compiled<V>>();
  constructor(
    private readonly vocabulary: Vocabulary<V, P>,
    private readonly size = 256,
  ) {}

  get(template: string): Compiled<V> {
    let c = this.compiled.get(template);
    if (!c) {
      c = compile(template, this.vocabulary);
      if (this.compiled.size >= this.size) this.compiled.clear();
      this.compiled.set(template, c);
    }
    return c;
  }
}
