// Database-independent: CSV reading is a stream transform with no store.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CsvSyntaxError, csvRecords } from '../../src/shared/csv.js';

async function read(text: string | Readable): Promise<Record<string, string>[]> {
  const source = typeof text === 'string' ? Readable.from([Buffer.from(text)]) : text;
  const out: Record<string, string>[] = [];
  for await (const record of csvRecords(source)) out.push(record);
  return out;
}

async function failure(text: string): Promise<unknown> {
  try {
    await read(text);
  } catch (err) {
    return err;
  }
  return null;
}

describe('csvRecords', () => {
  it('keys every row by the header, skipping a byte-order mark and blank lines', async () => {
    expect(await read('\uFEFFinput,expected\n"a, quoted",1\n\nb,"2"\n')).toEqual([
      { input: 'a, quoted', expected: '1' },
      { input: 'b', expected: '2' },
    ]);
  });

  it('reads a text split across chunks anywhere', async () => {
    const chunks = ['in', 'put,exp', 'ected\nx', ',"y\n', 'z"\n'].map((c) => Buffer.from(c));
    expect(await read(Readable.from(chunks))).toEqual([{ input: 'x', expected: 'y\nz' }]);
  });

  it('names the line of a row of another length than the header', async () => {
    const err = await failure('a,b\n1,2\n3\n');
    expect(err).toBeInstanceOf(CsvSyntaxError);
    expect((err as CsvSyntaxError).line).toBe(3);
    expect((err as CsvSyntaxError).message).toMatch(/^line 3: /);
    expect((err as CsvSyntaxError).reason).not.toMatch(/line \d+/);
  });

  it('refuses an unclosed quote', async () => {
    const err = await failure('a,b\n"1,2\n');
    expect(err).toBeInstanceOf(CsvSyntaxError);
    expect((err as CsvSyntaxError).reason).toMatch(/quote/i);
  });

  it("passes the source's own error through", async () => {
    const source = new Readable({ read() {} });
    source.push('a,b\n1,2\n');
    setImmediate(() => source.destroy(new Error('connection reset')));
    await expect(read(source)).rejects.toThrow('connection reset');
  });

  it('throws at once for a source that failed before it was read', async () => {
    const source = new Readable({ read() {} });
    source.on('error', () => {});
    source.destroy(new Error('corrupt gzip'));
    await new Promise((r) => setImmediate(r));
    await expect(read(source)).rejects.toThrow('corrupt gzip');
  });
});
