import { describe, expect, it } from 'vitest';
import { layout, type PlannedSide, type RunPlan } from '../../src/engine/plan.js';
import { pairwiseScore } from '../../src/scoring/judge/scorer.js';
import { asText, compileTemplate, render, variablesOf } from '../../src/scoring/judge/template.js';
import { parsePairwise, parsePointwise } from '../../src/scoring/judge/verdict.js';

const side = (type: PlannedSide['type'], start: number, end: number, models: string[] = []): PlannedSide => ({
  type,
  ref: type === 'generate' ? null : 'x',
  models,
  range: { start, end },
});

// These units do not touch a database: run them once.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('engine units', () => {
  it('lays out aligned sides within their ranges and reports a short source', () => {
    const plan: Pick<RunPlan, 'sides' | 'generated'> = {
      sides: { sample: side('dataset', 0, 100), ground_truth: side('container', 10, 30), baseline: null },
      generated: null,
    };
    const l = layout(plan, { sample: 40, ground_truth: 25 });
    expect(l.positions).toBe(40); // the longer side: sample has 40 of its 100
    expect(l.expected).toBe(100);
    expect(l.offsets).toEqual({ sample: 0, ground_truth: 10, baseline: null });
  });

  it('takes a generate side’s inputs from the other side and applies its own range', () => {
    const plan: Pick<RunPlan, 'sides' | 'generated'> = {
      sides: { sample: side('generate', 2, 5, ['m']), ground_truth: side('dataset', 10, 20), baseline: null },
      generated: 'sample',
    };
    const l = layout(plan, { ground_truth: 1000 });
    expect(l.positions).toBe(3);
    expect(l.expected).toBe(3);
    expect(l.offsets.ground_truth).toBe(12);
    expect(layout(plan, { ground_truth: 13 }).positions).toBe(1);
    // A generate side with the default range over a 5-position ground truth asks for 5, not 100.
    const short: Pick<RunPlan, 'sides' | 'generated'> = {
      sides: { sample: side('generate', 0, 100, ['m']), ground_truth: side('dataset', 0, 5), baseline: null },
      generated: 'sample',
    };
    expect(layout(short, { ground_truth: 1000 })).toMatchObject({ positions: 5, expected: 5 });
    expect(layout(short, { ground_truth: 3 })).toMatchObject({ positions: 3, expected: 5 });
  });

  it('scores pairwise verdicts over both orders and flags inconsistency', () => {
    expect(pairwiseScore('A', 'B')).toEqual({ score: 1, inconsistent: false });
    expect(pairwiseScore('B', 'A')).toEqual({ score: 0, inconsistent: false });
    expect(pairwiseScore('tie', 'tie')).toEqual({ score: 0.5, inconsistent: false });
    // A judge that always prefers the first position: cancels to a tie, flagged.
    expect(pairwiseScore('A', 'A')).toEqual({ score: 0.5, inconsistent: true });
    expect(pairwiseScore('A', 'tie')).toEqual({ score: 0.5, inconsistent: true });
  });

  it('parses judge replies strictly', () => {
    expect(parsePointwise('{"score": 4, "reasoning": "ok"}')).toEqual({ score: 4, reasoning: 'ok' });
    expect(parsePointwise('```json\n{"score": "0.5"}\n```')).toEqual({ score: 0.5, reasoning: '' });
    expect(parsePointwise('I give it a 7')).toBeNull();
    expect(parsePointwise('{"score": "high"}')).toBeNull();
    expect(parsePairwise('{"winner":"b"}')?.winner).toBe('B');
    expect(parsePairwise('{"winner":"C"}')).toBeNull();
  });

  it('renders templates with nested metadata and message lists', () => {
    const text = render('Q: {{input}} A: {{ output }} E: {{expected}} T: {{metadata.topic}}', {
      input: [{ role: 'user', content: 'hi' }],
      output: 'hello',
      expected: null,
      metadata: { topic: 'greeting' },
    });
    expect(text).toBe('Q: user: hi A: hello E:  T: greeting');
    expect(variablesOf('{{expected}} and {{metadata.a}}')).toEqual(new Set(['expected', 'metadata']));
  });

  /** The template rules matched at every variable, as a regular-expression replacement: the reference. */
  function byReplacement(template: string, values: Record<string, unknown>): string {
    return template.replace(
      /\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g,
      (_m, path: string) => {
        let current: unknown = values;
        for (const key of path.split('.')) {
          current =
            current !== null && typeof current === 'object'
              ? (current as Record<string, unknown>)[key]
              : undefined;
        }
        return asText(current);
      },
    );
  }

  it('renders a compiled template as a replacement at every variable does; render is the same', () => {
    const templates = [
      'Q: {{input}} A: {{ output }} E: {{expected}} T: {{metadata.topic}}',
      '{{output}}{{output}}',
      'no variables at all, $& $1 and {{ not a variable }}',
      '{{metadata.a.b}} / {{metadata.missing.deeper}} / {{unknown}} / {{ baseline }}',
      '',
    ];
    const values = [
      {
        input: 'q',
        output: 'out $& $1',
        expected: 3,
        baseline: null,
        metadata: { topic: 't', a: { b: [1] } },
      },
      { input: [{ role: 'user', content: 'hi' }], output: { x: 1 }, expected: null, metadata: {} },
    ];
    for (const t of templates) {
      const compiled = compileTemplate(t);
      for (const v of values) {
        expect(compiled(v)).toBe(byReplacement(t, v));
        expect(render(t, v)).toBe(byReplacement(t, v));
      }
    }
    expect(compileTemplate('A {{output}} B {{metadata.a.b}} C')(values[0]!)).toBe('A out $& $1 B [1] C');
  });
});
