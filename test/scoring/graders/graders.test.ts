// Database-independent: the graders are pure functions.
import { describe, expect, it } from 'vitest';
import { parseFormula } from '../../../src/scoring/graders/formula.js';
import { grade } from '../../../src/scoring/graders/grade.js';
import type { GraderPorts } from '../../../src/scoring/graders/result.js';
import { sampleNamespace } from '../../../src/scoring/graders/sample.js';
import type { Grader } from '../../../src/scoring/graders/schemas.js';
import { renderTemplate, TemplateError } from '../../../src/scoring/graders/template.js';
import { graderIssues } from '../../../src/scoring/graders/validate.js';

const unused: GraderPorts = {
  complete: () => Promise.reject(new Error('no model calls here')),
  embed: () => Promise.reject(new Error('no embeddings here')),
  python: () => Promise.reject(new Error('no python here')),
};
const signal = new AbortController().signal;

const toolSample = sampleNamespace({
  role: 'assistant',
  content: null,
  tool_calls: [
    {
      id: 'c1',
      type: 'function',
      function: { name: 'quote', arguments: '{"symbols":["AAPL","MSFT"],"n":2}' },
    },
  ],
});
const ns = { item: { name: 'Ada', tags: ['x', 'y'], nested: { 'a b': 1 } }, sample: { ...toolSample } };

describe('grader templates', () => {
  it('resolves item and sample paths, with or without spaces, into JSON strings and arrays', () => {
    expect(renderTemplate('{{item.name}}/{{ item.name }}/{{item.tags[1]}}', ns)).toBe('Ada/Ada/y');
    expect(renderTemplate('{{sample.output_tools[0].function.arguments.symbols}}', ns)).toBe(
      '["AAPL","MSFT"]',
    );
    expect(renderTemplate('{{sample.output_tools[0].function.arguments.symbols[1]}}', ns)).toBe('MSFT');
    expect(renderTemplate('{{item.nested["a b"]}} {{item.nested}}', ns)).toBe('1 {"a b":1}');
    expect(renderTemplate('{{sample.output_json.a}}', { sample: sampleNamespace('{"a": {"b": 2}}') })).toBe(
      '{"b":2}',
    );
  });

  it('names why a reference does not resolve, never rendering an empty string', () => {
    const cases: [string, RegExp][] = [
      ['{{item.missing}}', /item has no field 'missing'/],
      ['{{item.tags[5]}}', /item\.tags has 2 elements/],
      ['{{item.name.first}}', /item\.name is a string that is not JSON/],
      ['{{other.x}}', /unknown namespace 'other'/],
      ['{{item.__proto__}}', /has no field '__proto__'/],
      ['{{item.constructor}}', /has no field 'constructor'/],
      ['{{sample.output_json.a}}', /sample\.output_json is not an object/],
    ];
    for (const [template, reason] of cases) {
      expect(() => renderTemplate(template, ns), template).toThrow(TemplateError);
      expect(() => renderTemplate(template, ns), template).toThrow(reason);
    }
  });
});

describe('string_check and text_similarity', () => {
  const check = (operation: 'eq' | 'ne' | 'like' | 'ilike', input: string, reference: string) =>
    grade({ type: 'string_check', name: 's', operation, input, reference }, ns, unused, signal);

  it('applies eq, ne, like and ilike to the rendered texts', async () => {
    expect((await check('eq', '{{item.name}}', 'Ada')).reward).toBe(1);
    expect((await check('eq', '{{item.name}}', 'ada')).reward).toBe(0);
    expect((await check('ne', '{{item.name}}', 'ada')).reward).toBe(1);
    expect((await check('like', 'Hello Ada!', '{{item.name}}')).reward).toBe(1);
    expect((await check('like', 'hello ada!', '{{item.name}}')).reward).toBe(0);
    expect((await check('ilike', 'hello ada!', '{{item.name}}')).passed).toBe(true);
  });

  it('errors an item whose template does not resolve', async () => {
    const r = await check('eq', '{{item.nope}}', 'x');
    expect(r.reward).toBeNull();
    expect(r.errors.invalid_variable_error).toBe(true);
    expect(r.error?.message).toMatch(/no field 'nope'/);
  });

  it('scores rouge_l and passes at the threshold', async () => {
    const r = await grade(
      {
        type: 'text_similarity',
        name: 't',
        evaluation_metric: 'rouge_l',
        input: 'the cat sat',
        reference: 'the cat sat down',
        pass_threshold: 0.8,
      },
      ns,
      unused,
      signal,
    );
    expect(r.reward).toBeCloseTo(6 / 7, 12);
    expect(r.passed).toBe(true);
  });
});

describe('multi graders', () => {
  const multi = (calculate_output: string): Grader => ({
    type: 'multi',
    name: 'm',
    calculate_output,
    graders: {
      exact: {
        type: 'string_check',
        name: 'exact',
        operation: 'eq',
        input: '{{item.name}}',
        reference: 'Ada',
      },
      fuzzy: {
        type: 'text_similarity',
        name: 'fuzzy',
        evaluation_metric: 'fuzzy_match',
        input: 'abcd',
        reference: 'abce',
      },
    },
  });

  it('combines sub-rewards by the formula', async () => {
    const r = await grade(multi('0.5 * exact + 0.5 * fuzzy'), ns, unused, signal);
    expect(r.subRewards).toEqual({ exact: 1, fuzzy: 0.75 });
    expect(r.reward).toBeCloseTo(0.875, 12);
    expect(
      (await grade(multi('max(exact, fuzzy) - min(exact, fuzzy)'), ns, unused, signal)).reward,
    ).toBeCloseTo(0.25);
  });

  it('reports formula problems in the error flags', async () => {
    const parse = await grade(multi('exact +* fuzzy'), ns, unused, signal);
    expect(parse.errors.formula_parse_error).toBe(true);
    const variable = await grade(multi('exact + other'), ns, unused, signal);
    expect(variable.errors.invalid_variable_error).toBe(true);
    expect(variable.error?.message).toMatch(/'other'/);
  });

  it('evaluates no code: no member access, no assignment, no function definition, no prototype', () => {
    for (const text of ['exact.constructor', 'exact = 1', 'f(x) = x', 'constructor', '__proto__', 'this']) {
      expect(() => parseFormula(text, ['exact']).evaluate({ exact: 1 }), text).toThrow();
    }
  });
});

describe('grader validation', () => {
  it('reports every problem with its location', () => {
    const issues = graderIssues(
      {
        type: 'label_model',
        name: '',
        model: 'm',
        input: [{ role: 'judge', content: '{{x.y}}' }],
        labels: ['a'],
        passing_labels: ['b'],
        extra: 1,
      },
      ['grader'],
    );
    const locs = issues.map((i) => i.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['grader.name', 'grader.input.0.role', 'grader.extra']));
    const rules = graderIssues(
      {
        type: 'label_model',
        name: 'l',
        model: 'm',
        input: [{ role: 'user', content: '{{x.y}}' }],
        labels: ['a'],
        passing_labels: ['b'],
      },
      ['grader'],
    );
    expect(rules.map((i) => i.loc.join('.'))).toEqual(['grader.input.0.content', 'grader.passing_labels.0']);
    expect(graderIssues({ type: 'nope' }, ['grader'])[0]?.msg).toMatch(/string_check/);
    const multi = graderIssues(
      {
        type: 'multi',
        name: 'm',
        calculate_output: 'a +',
        graders: { a: { type: 'string_check', name: 'a', input: 'x' } },
      },
      ['grader'],
    );
    expect(multi.map((i) => i.loc.join('.'))).toEqual(
      expect.arrayContaining(['grader.graders.a.reference', 'grader.graders.a.operation']),
    );
  });
});
