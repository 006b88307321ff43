/**
 * The kinds of OTLP bomb `bench/otlp-bombs.ts` sends, each built only in the attacker process that sends
 * it (`bench/otlp-attacker.ts`): the bench's own process, which times the gateway, holds none of them.
 */
import {
  deepNesting,
  gzip,
  gzipBomb,
  hugeStrings,
  manyAttributes,
  manyAttributesJson,
  manySpans,
} from '../test/traces/bombs.js';

const PROTO = { 'content-type': 'application/x-protobuf' };
const GZIP = { ...PROTO, 'content-encoding': 'gzip' };

export interface BombKind {
  name: string;
  what: string;
  /** Sent once per attacker, not again and again (a valid request: it is stored). */
  once?: boolean;
  build(): { body: Uint8Array | string; headers: Record<string, string> };
}

const KINDS: BombKind[] = [
  {
    name: 'attributes_1m_gzip',
    what: 'one span of 1,000,000 empty attributes, gzipped',
    build: () => ({ body: gzip(manyAttributes(1_000_000)), headers: GZIP }),
  },
  {
    name: 'deep_nesting',
    what: 'one attribute of 50,000 nested arrayValues',
    build: () => ({ body: deepNesting(50_000), headers: PROTO }),
  },
  {
    name: 'spans_150k',
    what: '150,000 spans (past the 100,000 limit)',
    build: () => ({ body: manySpans(150_000), headers: PROTO }),
  },
  {
    name: 'huge_strings',
    what: 'one span of four 2 MiB string attributes, gzipped',
    build: () => ({ body: gzip(hugeStrings(4, 2 * 1024 * 1024)), headers: GZIP }),
  },
  {
    name: 'gzip_bomb',
    what: '256 MiB of zeros, gzipped',
    build: () => ({ body: gzipBomb(256 * 1024 ** 2), headers: GZIP }),
  },
  {
    name: 'attributes_json',
    what: 'OTLP/JSON, one span of 400,000 empty attributes (8.8 MB)',
    build: () => ({ body: manyAttributesJson(400_000), headers: { 'content-type': 'application/json' } }),
  },
  {
    name: 'spans_100k',
    what: '100,000 valid spans (at the limit: taken, stored in parts)',
    once: true,
    build: () => ({ body: manySpans(100_000), headers: PROTO }),
  },
];

/** The kinds named in `only` (comma-separated; empty: all), in the order above. */
export function bombKinds(only: string): BombKind[] {
  const wanted = new Set(only.split(',').filter(Boolean));
  return wanted.size ? KINDS.filter((b) => wanted.has(b.name)) : KINDS;
}
