import { isIP } from 'node:net';

/** The 16 bytes of an IPv6 address (any spelling Node accepts, a trailing dotted quad included). */
export function ipv6Bytes(address: string): Uint8Array | null {
  if (isIP(address) !== 6) return null;
  let text = address.toLowerCase();
  const words: number[] = [];
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((w) => parseInt(w, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  words.push(...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back);
  if (words.length !== 8) return null;
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 0xff;
  });
  return bytes;
}

const quadOf = (b: Uint8Array, at: number, mask = 0) =>
  [0, 1, 2, 3].map((i) => (b[at + i]! ^ mask) & 0xff).join('.');

const zero = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);

/**
 * The IPv4 address an IPv6 address carries, where the spelling is one of the standard embeddings, or
 * null. A connection to such an address reaches (or is translated to) the IPv4 one, so its class decides:
 * - IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`;
 * - NAT64, well-known `64:ff9b::a.b.c.d` and local-use `64:ff9b:1::/48` (RFC 6052 /96 and /48 layouts);
 * - 6to4 `2002:AABB:CCDD::/48` (a.b.c.d in bits 16–47);
 * - Teredo `2001:0::/32` (the client's address, inverted, in the last 32 bits);
 * - ISATAP interface ids `…:0:5efe:a.b.c.d` and `…:200:5efe:a.b.c.d`.
 */
export function embeddedIpv4(address: string): string | null {
  const b = ipv6Bytes(address);
  if (!b) return null;
  const word = (i: number) => (b[2 * i]! << 8) | b[2 * i + 1]!;
  if (zero(b, 0, 10) && word(5) === 0xffff) return quadOf(b, 12);
  if (zero(b, 0, 8) && word(4) === 0xffff && word(5) === 0) return quadOf(b, 12);
  if (zero(b, 0, 12)) return quadOf(b, 12);
  if (word(0) === 0x64 && word(1) === 0xff9b) {
    if (zero(b, 4, 12)) return quadOf(b, 12);
    // Local-use prefix /48: bits 48–63, then (after the zero octet at 64–71) bits 72–87.
    if (word(2) === 1) return [b[6], b[7], b[9], b[10]].join('.');
  }
  if (word(0) === 0x2002) return quadOf(b, 2);
  if (word(0) === 0x2001 && word(1) === 0) return quadOf(b, 12, 0xff);
  if ((word(4) & 0xfdff) === 0 && word(5) === 0x5efe) return quadOf(b, 12);
  return null;
}
