import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * Issue 15, item 7: what is accepted is stored exactly; what cannot be stored exactly is a 422 (or a
 * 400 for bytes that are not UTF-8), never accepted and then changed.
 */
let h: Harness;
beforeAll(async () => {
  // The judge's upstream is a closed port: runs are created, not executed usefully.
  h = await startHarness({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' } });
  await h.call('POST', '/v1/containers', { body: { label: 'app' } });
  await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'helpful', model: 'openai/gpt-4o-mini', prompt: 'Rate {{output}}' },
  });
  await h.call('POST', '/v1/datasets', { body: { label: 'qa', items: [{ input: 'q', output: 'a' }] } });
});
afterAll(async () => {
  await h.close();
});

const json = { 'content-type': 'application/json' };
const ndjson = { 'content-type': 'application/x-ndjson' };
const LONE = 'd\ud800';
const PAIR = 'smile \ud83d\ude00';

function locs(res: { body: any }): unknown[] {
  return res.body.detail.map((d: { loc: unknown[] }) => d.loc);
}

describe('lone UTF-16 surrogates', () => {
  it('answers 422 at the field, wherever the string is in a JSON body, and stores nothing', async () => {
    const cases: [string, unknown, (string | number)[]][] = [
      ['/v1/containers', { label: 'lone', description: LONE }, ['body', 'description']],
      [
        '/v1/containers',
        { label: 'lone', metadata: { deep: [{ x: 'a\udc00b' }] } },
        ['body', 'metadata', 'deep', 0, 'x'],
      ],
      ['/v1/containers', { label: 'lone', metadata: { 'k\ud800': 1 } }, ['body', 'metadata', `k\ud800`]],
      [
        '/v1/datasets',
        { label: 'lone', items: [{ input: 'ok' }, { input: LONE }] },
        ['body', 'items', 1, 'input'],
      ],
      [
        '/v1/evaluators',
        { type: 'judge', name: 'lone', model: 'openai/gpt-4o-mini', prompt: `Rate {{output}} ${LONE}` },
        ['body', 'prompt'],
      ],
      [
        '/v1/chat/completions',
        { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: LONE }] },
        ['body', 'messages', 0, 'content'],
      ],
    ];
    for (const [path, body, loc] of cases) {
      // JSON.stringify writes a lone surrogate as the escape \ud800, as any client would send it.
      const res = await h.call('POST', path, { body });
      // The gateway's OpenAI-compatible routes answer validation failures 400, the issues in details.
      const gateway = path.startsWith('/v1/chat/');
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(gateway ? 400 : 422);
      const issues = gateway ? res.body.error.details.issues : res.body.detail;
      expect(issues).toContainEqual(expect.objectContaining({ loc, type: 'string_unicode' }));
    }
    expect((await h.call('GET', '/v1/containers/lone')).status).toBe(404);
    expect((await h.call('GET', '/v1/datasets/lone')).status).toBe(404);
    expect((await h.call('GET', '/v1/evaluators/lone')).status).toBe(404);
  });

  it('takes well-formed pairs and reads them back exactly', async () => {
    const created = await h.call('POST', '/v1/containers', { body: { label: 'paired', description: PAIR } });
    expect(created.status).toBe(201);
    expect(created.body.description).toBe(PAIR);
    expect((await h.call('GET', '/v1/containers/paired')).body.description).toBe(PAIR);
    // Raw UTF-8 and the escaped pair are the same text.
    const raw = await h.call('POST', '/v1/containers', {
      raw: '{"label":"paired-raw","description":"smile \\ud83d\\ude00"}',
      headers: json,
    });
    expect(raw.body.description).toBe(PAIR);
  });

  it('answers 422 naming the line for a JSON-lines dataset upload or log import holding one', async () => {
    const lines = [
      '{"input":"fine \\ud83d\\ude00"}',
      '{"input":"d\\ud800"}',
      '{"input":"escaped \\\\ud800"}',
    ];
    const res = await h.call('POST', '/v1/datasets?label=lines', { raw: lines.join('\n'), headers: ndjson });
    expect(res.status).toBe(422);
    expect(locs(res)).toEqual([['body', 'line', 2]]);
    expect(res.body.detail[0].type).toBe('string_unicode');
    const logs = await h.call('POST', '/v1/containers/app/logs', {
      raw: '{"model":"m","output":"x\\udfff"}\n',
      headers: ndjson,
    });
    expect(logs.status).toBe(422);
    expect(logs.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'line', 1, 'output'], type: 'string_unicode' }),
    ]);
    // Without the bad line, the same rows are stored and read back as sent.
    const good = await h.call('POST', '/v1/datasets?label=lines', {
      raw: [lines[0], lines[2]].join('\n'),
      headers: ndjson,
    });
    expect(good.status).toBe(201);
    const items = await h.call('GET', '/v1/datasets/lines/items');
    expect(items.body.data.map((i: any) => i.data.input)).toEqual([`fine \ud83d\ude00`, 'escaped \\ud800']);
  });

  it('answers 400 invalid_json for a body that is not UTF-8, instead of storing U+FFFD', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"label":"latin","description":"caf'),
      Buffer.from([0xe9]),
      Buffer.from('"}'),
    ]);
    const res = await h.call('POST', '/v1/containers', { raw: bytes, headers: json });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
    expect(res.body.error.message).toMatch(/UTF-8/);
    expect((await h.call('GET', '/v1/containers/latin')).status).toBe(404);
  });
});

describe('ranges', () => {
  const run = (range: string) =>
    h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'app', evaluators: ['helpful'], sample: { type: 'dataset', dataset: 'qa', range } },
    });

  it('answers 422 for bounds past 2^53 - 1 instead of storing them as 1e+23', async () => {
    for (const range of [
      '0:100000000000000000000000',
      '9007199254740992:9007199254740993',
      '0:9007199254740992',
    ]) {
      const res = await run(range);
      expect(res.status, range).toBe(422);
      expect(res.body.detail).toEqual([
        expect.objectContaining({ loc: ['body', 'sample', 'range'], type: 'less_than_equal' }),
      ]);
    }
    // Text that is not start:end is reported once, by the pattern.
    const bad = await run('1-5');
    expect(bad.body.detail).toEqual([expect.objectContaining({ type: 'string_pattern_mismatch' })]);
    const items = await h.call('GET', '/v1/datasets/qa/items?range=0:100000000000000000000000');
    expect(items.status).toBe(422);
    expect(locs(items)).toEqual([['query', 'range']]);
  });

  it('keeps the largest exact bound as sent', async () => {
    const res = await run('0:9007199254740991');
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.sample.range).toBe('0:9007199254740991');
    expect((await h.call('GET', `/v1/evaluation/runs/${res.body.id}`)).body.sample.range).toBe(
      '0:9007199254740991',
    );
    await h.call('POST', `/v1/evaluation/runs/${res.body.id}/cancel`);
  });
});

describe('code evaluator sources', () => {
  it('answers 422 (not 501) for a source too complex for Python to compile', async () => {
    for (const expression of [Array(200_000).fill('1').join('+'), `${'-'.repeat(200_000)}1`]) {
      const res = await h.call('POST', '/v1/evaluators', {
        body: {
          type: 'code',
          name: 'complex',
          source: `def evaluate(sample, ground_truth, baseline):\n    return ${expression}\n`,
        },
      });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(422);
      expect(res.body.detail).toEqual([
        expect.objectContaining({
          loc: ['body', 'source'],
          type: 'python_source',
          msg: expect.stringMatching(/too complex/),
        }),
      ]);
    }
    expect((await h.call('GET', '/v1/evaluators/complex')).status).toBe(404);
  });
});
