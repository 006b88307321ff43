// Database-independent: the template engine is a pure function of a template and values.
import { describe, expect, it } from 'vitest';
import { compile, referencesIn, TemplateCache, type Vocabulary } from '../../src/scoring/template.js';

/** A vocabulary for the test: `{{ path.to.value }}`, read once into its parts, strict when `strict`. */
function vocabulary(strict: boolean, parsed: string[] = []): Vocabulary<Record<string, unknown>, string[]> {
  return {
    pattern: /\{\{([^}]*)\}\}/g,
    parse(reference) {
      parsed.push(reference);
      return reference.trim().split('.');
    },
    write(path, values, reference) {
      let at: unknown = values;
      for (const key of path)
        at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined;
      if (at === undefined) {
        if (strict) throw new Error(`unresolved {{${reference}}}`);
        return '';
      }
      return typeof at === 'string' ? at : JSON.stringify(at);
    },
  };
}

describe('compile', () => {
  it('writes every reference at the values, in order, keeping the text between them', () => {
    const t = compile('Q: {{ input }} / A: {{output}} ({{meta.lang}})!', vocabulary(false));
    expect(t({ input: 'hi', output: 'hello', meta: { lang: 'en' } })).toBe('Q: hi / A: hello (en)!');
    expect(t({ input: 'x', output: { n: 1 }, meta: {} })).toBe('Q: x / A: {"n":1} ()!');
  });

  it('reads each reference once, however often the template is written', () => {
    const parsed: string[] = [];
    const t = compile('{{a}}-{{b}}-{{a}}', vocabulary(false, parsed));
    for (let i = 0; i < 5; i++) expect(t({ a: String(i), b: 'b' })).toBe(`${i}-b-${i}`);
    expect(parsed).toEqual(['a', 'b', 'a']);
  });

  it('leaves a template without references as it is', () => {
    expect(compile('plain text', vocabulary(true))({})).toBe('plain text');
    expect(compile('', vocabulary(true))({})).toBe('');
  });

  it('lets a strict vocabulary refuse a reference that does not resolve', () => {
    const t = compile('{{ missing.key }}', vocabulary(true));
    expect(() => t({})).toThrow('unresolved {{ missing.key }}');
  });
});

describe('referencesIn', () => {
  it('lists the references, trimmed, in order', () => {
    expect(referencesIn('{{ a }} and {{b.c}} and {{ a }}', /\{\{([^}]*)\}\}/g)).toEqual(['a', 'b.c', 'a']);
    expect(referencesIn('none here', /\{\{([^}]*)\}\}/g)).toEqual([]);
  });
});

describe('TemplateCache', () => {
  it('compiles a template once while the cache holds it, and starts over when full', () => {
    const parsed: string[] = [];
    const cache = new TemplateCache(vocabulary(false, parsed), 2);
    const first = cache.get('{{x}}');
    expect(cache.get('{{x}}')).toBe(first);
    expect(parsed).toEqual(['x']);
    cache.get('{{y}}');
    cache.get('{{z}}');
    expect(cache.get('{{x}}')).not.toBe(first);
    expect(cache.get('{{x}}')({ x: 'v' })).toBe('v');
    expect(parsed).toEqual(['x', 'y', 'z', 'x']);
  });
});
