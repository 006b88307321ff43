import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

// The forms of a dataset upload over HTTP, accepted alike: a JSON body, JSON lines, CSV (raw, gzipped,
// or as a form's file). A malformed CSV is a 422 naming its line, and nothing is kept.
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const CSV = 'input,expected\n"Hello, world",greeting\n"two\nlines",multi\nplain,"with ""quotes"""\n';
const ROWS = [
  { input: 'Hello, world', expected: 'greeting' },
  { input: 'two\nlines', expected: 'multi' },
  { input: 'plain', expected: 'with "quotes"' },
];

async function post(
  query: string,
  body: string | Buffer | FormData,
  headers: Record<string, string> = {},
  key = h.admin.key,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${h.url}/v1/datasets${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, ...headers },
    body,
    signal: AbortSignal.timeout(15_000),
  }).catch((err: unknown) => {
    throw new Error(`POST /v1/datasets${query} ${JSON.stringify(headers)}: ${String(err)}`);
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function items(label: string, key = h.admin.key): Promise<unknown[]> {
  const res = await h.call('GET', `/v1/datasets/${label}/items?limit=100`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body.data.map((d: { data: unknown }) => d.data);
}

const form = (fields: Record<string, string>, file: { name: string; text: string; type?: string }) => {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.append(k, v);
  data.append('file', new Blob([file.text], { type: file.type ?? 'application/octet-stream' }), file.name);
  return data;
};

describe('dataset uploads over HTTP', () => {
  it('accepts the same rows as a JSON body, JSON lines, CSV, gzipped CSV and form files', async () => {
    const json = await post('', JSON.stringify({ label: 'f-json', items: ROWS }), {
      'content-type': 'application/json',
    });
    expect(json.status, JSON.stringify(json.body)).toBe(201);
    const lines = ROWS.map((r) => JSON.stringify(r)).join('\n');
    const ndjson = await post('?label=f-lines', lines, { 'content-type': 'application/x-ndjson' });
    expect(ndjson.status, JSON.stringify(ndjson.body)).toBe(201);
    const csv = await post('?label=f-csv&description=from%20CSV', CSV, { 'content-type': 'text/csv' });
    expect(csv.status, JSON.stringify(csv.body)).toBe(201);
    expect(csv.body).toMatchObject({
      object: 'dataset',
      label: 'f-csv',
      description: 'from CSV',
      item_count: 3,
    });
    const gz = await post('?label=f-gz', gzipSync(CSV), {
      'content-type': 'text/csv; charset=utf-8',
      'content-encoding': 'gzip',
    });
    expect(gz.status, JSON.stringify(gz.body)).toBe(201);
    const formCsv = await post(
      '',
      form({ label: 'f-form-csv', description: 'a form' }, { name: 'qa.csv', text: CSV }),
    );
    expect(formCsv.status, JSON.stringify(formCsv.body)).toBe(201);
    expect(formCsv.body).toMatchObject({ label: 'f-form-csv', description: 'a form', item_count: 3 });
    const formLines = await post('?label=f-form-lines', form({}, { name: 'qa.jsonl', text: lines }));
    expect(formLines.status, JSON.stringify(formLines.body)).toBe(201);
    for (const label of ['f-json', 'f-lines', 'f-csv', 'f-gz', 'f-form-csv', 'f-form-lines']) {
      expect(await items(label), label).toEqual(ROWS);
    }
  });

  it('refuses a malformed CSV with a 422 naming its line, keeping nothing', async () => {
    const before = (await h.call('GET', '/v1/datasets')).body.total;
    const ragged = await post('?label=bad-ragged', 'input,expected\na,b\nc,d,e\n', {
      'content-type': 'text/csv',
    });
    expect(ragged.status).toBe(422);
    expect(ragged.body.detail).toHaveLength(1);
    expect(ragged.body.detail[0]).toMatchObject({ loc: ['body', 'line', 3], type: 'csv_invalid' });
    expect(ragged.body.detail[0].msg).toMatch(/^Line 3 of the CSV: .*columns length is 2, got 3/);
    const unclosed = await post('?label=bad-quote', 'input\nok\n"never closed\n', {
      'content-type': 'text/csv',
    });
    expect(unclosed.status).toBe(422);
    expect(unclosed.body.detail[0].msg).toMatch(/^Line \d of the CSV: Quote Not Closed/);
    const formBad = await post('', form({ label: 'bad-form' }, { name: 'x.csv', text: 'a,b\n1\n' }));
    expect(formBad.status).toBe(422);
    expect(formBad.body.detail[0].msg).toMatch(/^Line 2 of the CSV/);
    const corrupt = await post('?label=bad-gz', Buffer.from('not gzip at all'), {
      'content-type': 'text/csv',
      'content-encoding': 'gzip',
    });
    expect(corrupt.status).toBe(400);
    expect(corrupt.body.error.message).toMatch(/not valid gzip/);
    const headerOnly = await post('?label=bad-empty', 'input,expected\n', { 'content-type': 'text/csv' });
    expect(headerOnly.status).toBe(422);
    expect(headerOnly.body.detail[0].msg).toMatch(/no rows/);
    expect((await h.call('GET', '/v1/datasets')).body.total).toBe(before);
  });

  it('names what is missing or unsupported', async () => {
    const noLabel = await post('', CSV, { 'content-type': 'text/csv' });
    expect(noLabel.status).toBe(422);
    expect(noLabel.body.detail[0].loc).toEqual(['query', 'label']);
    const badLabel = await post('', form({ label: 'has space' }, { name: 'x.csv', text: CSV }));
    expect(badLabel.status).toBe(422);
    expect(badLabel.body.detail[0].loc[0]).toBe('body');
    const noFile = new FormData();
    noFile.append('label', 'no-file');
    const missing = await post('', noFile);
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].msg).toMatch(/no file part/);
    const unknown = await post(
      '',
      form({ label: 'txt' }, { name: 'notes.txt', text: CSV, type: 'text/plain' }),
    );
    expect(unknown.status).toBe(415);
    expect(unknown.body.error.message).toMatch(/name it \.csv, \.jsonl or \.ndjson/);
    const xml = await post('?label=xml', '<rows/>', { 'content-type': 'application/xml' });
    expect(xml.status).toBe(415);
    expect(xml.body.error.message).toContain('text/csv');
    const taken = await post('?label=f-csv', CSV, { 'content-type': 'text/csv' });
    expect(taken.status).toBe(409);
  });

  it("answers 401 to a wrong key and keeps each project's uploads to itself", async () => {
    const wrong = await post('?label=nope', CSV, { 'content-type': 'text/csv' }, 'eg_wrong');
    expect(wrong.status).toBe(401);
    const other = await h.key(['*'], 'other-project');
    const theirs = await post('?label=theirs', CSV, { 'content-type': 'text/csv' }, other.key);
    expect(theirs.status, JSON.stringify(theirs.body)).toBe(201);
    expect(await items('theirs', other.key)).toEqual(ROWS);
    expect((await h.call('GET', '/v1/datasets/theirs')).status).toBe(404);
    expect((await h.call('GET', `/v1/datasets/${theirs.body.id}/items`)).status).toBe(404);
    const readOnly = await h.key(['data:read']);
    expect((await post('?label=ro', CSV, { 'content-type': 'text/csv' }, readOnly.key)).status).toBe(403);
  });
});
