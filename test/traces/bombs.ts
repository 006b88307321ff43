import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

/**
 * OTLP export requests built to cost a decoder far more than their size (for the limits' tests and
 * bench/otlp-bombs.ts), written straight as protobuf wire bytes: building them as messages would itself
 * take the seconds they are meant to cost the server.
 */

const nowNs = () => BigInt(Date.now()) * 1_000_000n;

/** One span's fixed fields (ids, name, start) followed by `extra` wire bytes. */
function span(w: protobuf.Writer, extra: (w: protobuf.Writer) => void): void {
  w.uint32((1 << 3) | 2).bytes(randomBytes(16));
  w.uint32((2 << 3) | 2).bytes(randomBytes(8));
  w.uint32((5 << 3) | 2).string('bomb');
  w.uint32((7 << 3) | 1).fixed64(protobuf.util.LongBits.from(Number(nowNs() / 1000n) * 1000).toLong());
  extra(w);
}

/** An ExportTraceServiceRequest of the given spans' bodies, one resource, one scope. */
function request(spans: Uint8Array[]): Buffer {
  const scope = protobuf.Writer.create();
  for (const s of spans) scope.uint32((2 << 3) | 2).bytes(s);
  const resource = protobuf.Writer.create()
    .uint32((2 << 3) | 2)
    .bytes(scope.finish());
  return Buffer.from(
    protobuf.Writer.create()
      .uint32((1 << 3) | 2)
      .bytes(resource.finish())
      .finish(),
  );
}

function spanBytes(extra: (w: protobuf.Writer) => void = () => {}): Uint8Array {
  const w = protobuf.Writer.create();
  span(w, extra);
  return w.finish();
}

/** One span of `n` empty attributes (2 bytes each): the 1.1 M attribute request. */
export function manyAttributes(n: number): Buffer {
  return request([
    spanBytes((w) => {
      for (let i = 0; i < n; i++) w.uint32((9 << 3) | 2).uint32(0);
    }),
  ]);
}

/** One span whose one attribute nests `depth` arrayValues. */
export function deepNesting(depth: number): Buffer {
  // Lengths from the inside out: AnyValue{string 'x'}, then ArrayValue{values: [v]}, AnyValue{arrayValue}.
  const varint = (n: number) => (n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4);
  const inner = 3;
  const sizes: number[] = [inner];
  for (let d = 0; d < depth; d++) {
    const array = 1 + varint(sizes[sizes.length - 1]!) + sizes[sizes.length - 1]!;
    sizes.push(1 + varint(array) + array);
  }
  const w = protobuf.Writer.create();
  for (let d = depth; d > 0; d--) {
    const below = sizes[d - 1]!;
    const array = 1 + varint(below) + below;
    w.uint32((5 << 3) | 2).uint32(array);
    w.uint32((1 << 3) | 2).uint32(below);
  }
  w.uint32((1 << 3) | 2).string('x');
  const value = w.finish();
  const kv = protobuf.Writer.create()
    .uint32((1 << 3) | 2)
    .string('deep')
    .uint32((2 << 3) | 2)
    .bytes(value);
  return request([spanBytes((s) => s.uint32((9 << 3) | 2).bytes(kv.finish()))]);
}

/** `n` spans with valid ids (one random trace id, span ids counted from a random start) and a start time. */
export function manySpans(n: number): Buffer {
  const template = Buffer.from(spanBytes());
  // The span id's 8 bytes follow the trace id's field (2 + 16 bytes) and its own tag and length (2).
  const at = 2 + 16 + 2;
  const first = randomBytes(8).readBigUInt64BE() | 1n;
  const scope = protobuf.Writer.create();
  for (let i = 0; i < n; i++) {
    const span = Buffer.from(template);
    span.writeBigUInt64BE((first + BigInt(i)) % 2n ** 64n || 1n, at);
    scope.uint32((2 << 3) | 2).bytes(span);
  }
  const resource = protobuf.Writer.create()
    .uint32((2 << 3) | 2)
    .bytes(scope.finish());
  return Buffer.from(
    protobuf.Writer.create()
      .uint32((1 << 3) | 2)
      .bytes(resource.finish())
      .finish(),
  );
}

/** One span with `count` string attributes of `bytes` each. */
export function hugeStrings(count: number, bytes: number): Buffer {
  const text = 'a'.repeat(bytes);
  return request([
    spanBytes((w) => {
      for (let i = 0; i < count; i++) {
        const kv = protobuf.Writer.create()
          .uint32((1 << 3) | 2)
          .string(`big.${i}`)
          .uint32((2 << 3) | 2)
          .fork()
          .uint32((1 << 3) | 2)
          .string(text)
          .ldelim();
        w.uint32((9 << 3) | 2).bytes(kv.finish());
      }
    }),
  ]);
}

/** `bytes` of zeros, gzipped (a valid gzip stream that inflates past any body limit). */
export function gzipBomb(bytes: number): Buffer {
  return gzipSync(Buffer.alloc(bytes), { level: 9 });
}

/** OTLP/JSON: one span of `n` empty attributes. */
export function manyAttributesJson(n: number): string {
  const attrs = new Array(n).fill('{"key":"","value":{}}').join(',');
  const id = (b: number) => randomBytes(b).toString('hex');
  return (
    `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"${id(16)}","spanId":"${id(8)}",` +
    `"name":"bomb","startTimeUnixNano":"${nowNs()}","attributes":[${attrs}]}]}]}]}`
  );
}

export const gzip = (b: Buffer | string): Buffer => gzipSync(b);
