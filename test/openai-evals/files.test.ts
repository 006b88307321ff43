import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
let client: OpenAI;

const rows = (n: number, tag = 'r') =>
  Array.from({ length: n }, (_, i) => ({ item: { question: `${tag}${i}?`, answer: String(i) } }));
const jsonl = (objects: unknown[]) => `${objects.map((o) => JSON.stringify(o)).join('\n')}\n`;

beforeAll(async () => {
  h = await startHarness();
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});

async function upload(text: string, name = 'data.jsonl', purpose = 'evals') {
  return client.files.create({ file: await toFile(Buffer.from(text), name), purpose: purpose as 'evals' });
}

describe('/v1/files with the official SDK', () => {
  it('uploads a JSON-lines file for evals, stored as a dataset, and reads it back', async () => {
    const text = jsonl(rows(3));
    const before = Math.floor(Date.now() / 1000);
    const file = await upload(text, 'qa.jsonl');
    expect(file).toEqual({
      id: file.id,
      object: 'file',
      bytes: Buffer.byteLength(text),
      created_at: expect.any(Number),
      filename: 'qa.jsonl',
      purpose: 'evals',
      status: 'processed',
      expires_at: null,
      status_details: null,
    });
    expect(file.created_at).toBeGreaterThanOrEqual(before - 1);
    expect(await client.files.retrieve(file.id)).toEqual(file);
    const content = await (await client.files.content(file.id)).text();
    expect(
      content
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(rows(3));
    const dataset = await h.call('GET', `/v1/datasets/${file.id}`);
    expect(dataset.body.item_count).toBe(3);
  });

  it('streams large files in and out', async () => {
    const many = rows(12_000, 'big');
    const file = await upload(jsonl(many), 'big.jsonl');
    const lines = (await (await client.files.content(file.id)).text()).trim().split('\n');
    expect(lines).toHaveLength(12_000);
    expect(JSON.parse(lines[11_999] as string)).toEqual(many[11_999]);
  });

  it('lists with cursor pagination, newest first, filtered by purpose', async () => {
    const created = [];
    for (let i = 0; i < 3; i++) created.push((await upload(jsonl(rows(1, `p${i}`)), `p${i}.jsonl`)).id);
    const first = await client.files.list({ limit: 2 });
    expect(first.data.map((f) => f.id)).toEqual([created[2], created[1]]);
    expect(first.has_more).toBe(true);
    const all: string[] = [];
    for await (const f of client.files.list({ limit: 2, purpose: 'evals' })) all.push(f.id);
    expect(all.slice(0, 3)).toEqual([created[2], created[1], created[0]]);
    expect(new Set(all).size).toBe(all.length);
    const asc = await client.files.list({ order: 'asc', limit: 100 });
    expect(asc.data.map((f) => f.id)).toEqual([...all].reverse());
    expect((await client.files.list({ purpose: 'batch' })).data).toEqual([]);
  });

  it('deletes a file', async () => {
    const file = await upload(jsonl(rows(1)));
    expect(await client.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    await expect(client.files.retrieve(file.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('refuses bad uploads with 400 naming the problem, and keeps nothing of them', async () => {
    const purpose = await upload(jsonl(rows(1)), 'x.jsonl', 'fine-tune').catch((e: unknown) => e);
    expect(purpose).toBeInstanceOf(OpenAI.BadRequestError);
    expect((purpose as Error).message).toMatch(/purpose.*evals/);
    const notJson = await upload('{"a": 1}\nnot json\n').catch((e: unknown) => e);
    expect(notJson).toBeInstanceOf(OpenAI.BadRequestError);
    expect((notJson as Error).message).toMatch(/Line 2: Unexpected character/);
    const empty = await upload('\n\n').catch((e: unknown) => e);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);
    const listed = await client.files.list({ limit: 100 });
    expect(listed.data.map((f) => f.filename)).not.toContain('x.jsonl');
    const json = await h.call('POST', '/v1/files', { body: { purpose: 'evals' }, unchecked: true });
    expect(json.status).toBe(415);
    // A multipart body the parser cannot read is the client's mistake, not a 500.
    for (const raw of ['{}', '--zz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nab']) {
      const cut = await h.call('POST', '/v1/files', {
        raw,
        headers: { 'content-type': 'multipart/form-data; boundary=zz' },
        unchecked: true,
      });
      expect(cut.status, raw).toBe(400);
      expect(cut.body.error.message).toMatch(/multipart/);
    }
  });

  it("answers 404 for another project's file and 401 for a wrong key", async () => {
    const file = await upload(jsonl(rows(1)));
    const other = await h.key(['*'], 'other');
    const otherClient = new OpenAI({ apiKey: other.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    await expect(otherClient.files.retrieve(file.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(otherClient.files.content(file.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(otherClient.files.delete(file.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await otherClient.files.list()).data).toEqual([]);
    const wrong = new OpenAI({ apiKey: 'eg_wrong', baseURL: `${h.url}/v1`, maxRetries: 0 });
    await expect(wrong.files.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
