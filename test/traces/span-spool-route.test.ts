/**
 * `POST /v1/traces` with the span spool: an export is answered 200 only once its spans are in the spool
 * file; one whose spans cannot be written there is answered the retryable 503 (nothing of it taken,
 * nothing stored), and the same export sent again once the spool can be written is stored.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SPAN_SPOOL_FOLDER } from '../../src/capture/span-spool.js';
import { toIngested } from '../../src/traces/span.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

function exportOf(traceId: string, spanIds: string[]): string {
  const now = `${BigInt(Date.now()) * 1_000_000n}`;
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'spooled' } }] },
        scopeSpans: [
          {
            scope: { name: 'spool-test' },
            spans: spanIds.map((spanId) => ({
              traceId,
              spanId,
              name: 'step',
              kind: 1,
              startTimeUnixNano: now,
              endTimeUnixNano: now,
            })),
          },
        ],
      },
    ],
  });
}

const post = (body: string) =>
  fetch(`${h.url}/v1/traces`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.admin.key}`, 'content-type': 'application/json' },
    body,
  });

async function storedSpans(traceId: string): Promise<string[]> {
  const rows = await h.services.db
    .selectFrom('spans')
    .select('span_id')
    .where('trace_id', '=', traceId)
    .execute();
  return rows.map((r) => r.span_id).sort();
}

describe('OTLP ingest through the span spool', () => {
  it('answers 503 while the spool cannot be written, and stores the export sent again once it can', async () => {
    const dir = path.join(h.database.dataDir, SPAN_SPOOL_FOLDER);
    const traceId = randomBytes(16).toString('hex');
    const spanIds = Array.from({ length: 5 }, () => randomBytes(8).toString('hex')).sort();
    const body = exportOf(traceId, spanIds);

    // The spool's folder replaced by a file: no spool file can be opened.
    fs.rmSync(dir, { recursive: true, force: true });
    fs.writeFileSync(dir, '');
    try {
      const refused = await post(body);
      expect(refused.status).toBe(503);
      expect(await refused.text()).toContain('trace_store_full');
      await h.services.traces.flush();
      expect(await storedSpans(traceId)).toEqual([]);
    } finally {
      fs.rmSync(dir, { force: true });
      fs.mkdirSync(dir);
    }

    const taken = await post(body);
    expect(taken.status).toBe(200);
    await waitFor(async () => (await storedSpans(traceId)).length === 5, 10_000, 'the spans to be stored');
    expect(await storedSpans(traceId)).toEqual(spanIds);
  });

  it('takes the spans a process gone after this one started had spooled, without a restart', async () => {
    // A file of a worker killed after this server started (a process id no process has): at start there
    // was nothing to take, and no other process starts to take it.
    const dir = path.join(h.database.dataDir, SPAN_SPOOL_FOLDER);
    fs.mkdirSync(dir, { recursive: true });
    const traceId = randomBytes(16).toString('hex');
    const spanIds = Array.from({ length: 4 }, () => randomBytes(8).toString('hex')).sort();
    const lines = spanIds.map((spanId) => {
      const span = toIngested(
        {
          traceId: Buffer.from(traceId, 'hex'),
          spanId: Buffer.from(spanId, 'hex'),
          name: 'step',
          kind: 1,
          startTimeUnixNano: `${BigInt(Date.now()) * 1_000_000n}`,
        },
        { 'service.name': 'killed-worker' },
        { name: 'spool-test' },
      );
      if (typeof span === 'string') throw new Error(span);
      const { facts: _, ...bare } = span;
      return `${JSON.stringify({ p: h.admin.projectId, c: null, s: bare })}\n`;
    });
    fs.writeFileSync(path.join(dir, '4194303.feedface.00000001.jsonl'), lines.join(''));
    await waitFor(async () => (await storedSpans(traceId)).length === 4, 15_000, 'the spans to be taken');
    expect(await storedSpans(traceId)).toEqual(spanIds);
    await waitFor(
      () => !fs.readdirSync(dir).some((n) => n.startsWith('4194303.')),
      10_000,
      'the file to be deleted',
    );
  });
});
