// Database-independent: reading IPv6 spellings is a pure function.
import { describe, expect, it } from 'vitest';
import { embeddedIpv4, ipv6Bytes } from '../../src/llm/egress/ipv6.js';

const hex = (b: Uint8Array | null) => (b ? Buffer.from(b).toString('hex') : null);

describe('ipv6Bytes', () => {
  it('reads every spelling of the same address to the same 16 bytes', () => {
    const loopback = '00000000000000000000000000000001';
    expect(hex(ipv6Bytes('::1'))).toBe(loopback);
    expect(hex(ipv6Bytes('0:0:0:0:0:0:0:1'))).toBe(loopback);
    expect(hex(ipv6Bytes('0000:0000::0001'))).toBe(loopback);
    expect(hex(ipv6Bytes('FE80::ABCD'))).toBe('fe80000000000000000000000000abcd');
    expect(hex(ipv6Bytes('::'))).toBe('0'.repeat(32));
  });

  it('reads a trailing dotted quad as the last 32 bits', () => {
    expect(hex(ipv6Bytes('::ffff:10.0.0.1'))).toBe('00000000000000000000ffff0a000001');
    expect(hex(ipv6Bytes('::ffff:0a00:0001'))).toBe('00000000000000000000ffff0a000001');
  });

  it('refuses what is not an IPv6 address', () => {
    expect(ipv6Bytes('127.0.0.1')).toBeNull();
    expect(ipv6Bytes('localhost')).toBeNull();
    expect(ipv6Bytes('1::2::3')).toBeNull();
    expect(ipv6Bytes('')).toBeNull();
  });
});

describe('embeddedIpv4', () => {
  it.each([
    ['IPv4-mapped', '::ffff:127.0.0.1', '127.0.0.1'],
    ['IPv4-mapped, in hex', '::ffff:7f00:1', '127.0.0.1'],
    ['IPv4-translated', '::ffff:0:10.1.2.3', '10.1.2.3'],
    ['IPv4-compatible', '::192.168.1.1', '192.168.1.1'],
    ['NAT64 well-known prefix', '64:ff9b::169.254.169.254', '169.254.169.254'],
    ['NAT64 local-use /48', '64:ff9b:1:a9fe:a9:fe00::', '169.254.169.254'],
    ['6to4', '2002:0a00:0001::1', '10.0.0.1'],
    ['Teredo (inverted client address)', '2001:0:4136:e378:8000:63bf:80ff:fffe', '127.0.0.1'],
    ['ISATAP', 'fe80::5efe:10.0.0.5', '10.0.0.5'],
    ['ISATAP, global-scope interface id', 'fe80::200:5efe:172.16.0.1', '172.16.0.1'],
  ])('finds the IPv4 address in the %s spelling', (_name, address, ipv4) => {
    expect(embeddedIpv4(address)).toBe(ipv4);
  });

  it('finds none in an ordinary IPv6 address or in what is not one', () => {
    expect(embeddedIpv4('2606:4700:4700::1111')).toBeNull();
    expect(embeddedIpv4('fe80::1:2:3:4')).toBeNull();
    expect(embeddedIpv4('10.0.0.1')).toBeNull();
  });
});
