import { describe, expect, it } from 'vitest';
import { assembleRequest, serializeParts, splitRequest } from '../../src/traces/otlp/parts.js';
import type { OtlpTraceRequest } from '../../src/traces/otlp/proto.js';

// A decoded request split, serialized and put back together: no server and no database, so it runs once,
// in the SQLite project.

const spansOf = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ name: `s${from + i}`, traceId: new Uint8Array([1, 2, 3]) }));

const request = (): OtlpTraceRequest =>
  ({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'a' } }] },
        scopeSpans: [
          { scope: { name: 'one' }, spans: spansOf(0, 2_500) },
          { scope: { name: 'two' }, spans: spansOf(2_500, 700) },
        ],
      },
      {
        resource: { attributes: [] },
        scopeSpans: [{ scope: { name: 'three' }, spans: spansOf(3_200, 1_800) }],
      },
    ],
  }) as unknown as OtlpTraceRequest;

/** Every span of a request with its resource's service name and its scope's name, in order. */
const flat = (r: OtlpTraceRequest) =>
  (r.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => [
        (rs.resource?.attributes ?? [])[0]?.value?.stringValue ?? null,
        ss.scope?.name,
        s.name,
      ]),
    ),
  );

describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('a decoded request in parts', () => {
  it('splits it into parts of at most 2,000 spans that put back together to the same spans', async () => {
    const parts = splitRequest('spans', request(), 2_000);
    const sizes = parts.map((p) => flat(p as OtlpTraceRequest).length);
    expect(sizes).toEqual([2_000, 2_000, 1_000]);
    const back = await assembleRequest('spans', serializeParts(parts));
    expect(flat(back)).toEqual(flat(request()));
    expect(flat(back)).toHaveLength(5_000);
    // Bytes come back as bytes.
    expect(back.resourceSpans?.[0]?.scopeSpans?.[0]?.spans?.[0]?.traceId).toEqual(new Uint8Array([1, 2, 3]));
  });

  it('keeps a request without spans, and logs, whole', async () => {
    expect(await assembleRequest('spans', serializeParts(splitRequest('spans', {})))).toEqual({
      resourceSpans: [],
    });
    const empty = { resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [] }] } as OtlpTraceRequest;
    expect(await assembleRequest('spans', serializeParts(splitRequest('spans', empty)))).toEqual(empty);
    const logs = {
      resourceLogs: [{ scopeLogs: [{ scope: { name: 'l' }, logRecords: [{ body: { stringValue: 'x' } }] }] }],
    };
    expect(await assembleRequest('logs', serializeParts(splitRequest('logs', logs)))).toEqual(logs);
  });

  it('lets the event loop turn between two parts', async () => {
    const parts = serializeParts(splitRequest('spans', request(), 1_000));
    expect(parts).toHaveLength(5);
    let done = false;
    let ranBefore = false;
    setImmediate(() => {
      ranBefore = !done;
    });
    await assembleRequest('spans', parts);
    done = true;
    // Another callback ran while the parts were put back together, not only after.
    expect(ranBefore).toBe(true);
  });
});
