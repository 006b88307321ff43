import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerModel } from '../../src/catalog/models/service.js';
import {
  checkUpstreamUrl,
  checkUpstreamUrlResolved,
  classifyAddress,
  isAddressAllowed,
  type LookupFn,
  type UpstreamPolicy,
} from '../../src/llm/egress/policy.js';
import { ApiError } from '../../src/shared/errors.js';
import { type Harness, startHarness } from '../helpers/harness.js';

const open: UpstreamPolicy = { blockPrivate: false, allowedHosts: null };
const closed: UpstreamPolicy = { blockPrivate: true, allowedHosts: null };

const resolvesTo =
  (...addresses: string[]): LookupFn =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('address classes', () => {
  it('names every class, including IPv4 embedded in IPv6', () => {
    const cases: Record<string, string> = {
      '169.254.169.254': 'metadata',
      '169.254.170.2': 'metadata',
      'fd00:ec2::254': 'metadata',
      '100.100.100.200': 'metadata',
      '169.254.1.1': 'link_local',
      'fe80::1': 'link_local',
      'fe80::1%eth0': 'link_local',
      '::ffff:169.254.1.1': 'link_local',
      '::ffff:a9fe:101': 'link_local',
      '64:ff9b::a9fe:101': 'link_local',
      '127.0.0.1': 'loopback',
      '::1': 'loopback',
      '::ffff:127.0.0.1': 'loopback',
      '10.1.2.3': 'private',
      '172.20.0.1': 'private',
      '192.168.1.1': 'private',
      '100.64.0.1': 'private',
      'fd12:3456::1': 'private',
      '0.0.0.0': 'reserved',
      '::': 'reserved',
      '224.0.0.1': 'reserved',
      'ff02::1': 'reserved',
      '255.255.255.255': 'reserved',
      'not-an-ip': 'reserved',
      '8.8.8.8': 'public',
      '2606:4700:4700::1111': 'public',
      '::ffff:8.8.8.8': 'public',
    };
    for (const [ip, cls] of Object.entries(cases)) expect(classifyAddress(ip), ip).toBe(cls);
  });

  it('allows loopback and private addresses unless the operator blocks them; never link-local', () => {
    for (const ip of ['127.0.0.1', '10.0.0.5', 'fc00::1', '8.8.8.8'])
      expect(isAddressAllowed(ip, open), ip).toBe(true);
    for (const ip of ['127.0.0.1', '10.0.0.5', '::1']) expect(isAddressAllowed(ip, closed), ip).toBe(false);
    for (const ip of ['169.254.169.254', 'fe80::1', 'fd00:ec2::254', '0.0.0.0', '::ffff:169.254.169.254'])
      expect(isAddressAllowed(ip, open), ip).toBe(false);
    expect(isAddressAllowed('8.8.8.8', closed)).toBe(true);
  });

  it('sees the IPv4 address inside every IPv4-embedding IPv6 spelling', () => {
    const cases: Record<string, string> = {
      // IPv4-translated (::ffff:0:a.b.c.d), as written and as the URL parser prints it.
      '::ffff:0:127.0.0.1': 'loopback',
      '::ffff:0:7f00:1': 'loopback',
      '::ffff:0:10.0.0.1': 'private',
      '::ffff:0:169.254.169.254': 'metadata',
      // IPv4-compatible.
      '::127.0.0.1': 'loopback',
      '::10.1.1.1': 'private',
      // 6to4: 2002:AABB:CCDD:: carries a.b.c.d.
      '2002:7f00:1::': 'loopback',
      '2002:7f00:1::1': 'loopback',
      '2002:a00:1::': 'private',
      '2002:c0a8:101:1::5': 'private',
      '2002:a9fe:a9fe::': 'metadata',
      '2002:808:808::1': 'public',
      // NAT64, well-known and local-use (RFC 6052 /48 layout: bits 48–63 and 72–87).
      '64:ff9b::10.0.0.1': 'private',
      '64:ff9b::7f00:1': 'loopback',
      '64:ff9b:1:7f00:0:100::': 'loopback',
      '64:ff9b::8.8.8.8': 'public',
      // Teredo: the client's address, inverted, in the last 32 bits (80ff:fffe is 127.0.0.1).
      '2001:0:4136:e378:8000:63bf:80ff:fffe': 'loopback',
      '2001:0:4136:e378:8000:63bf:f5ff:fffe': 'private',
      // ISATAP interface ids.
      '2001:db8::5efe:10.1.2.3': 'private',
      '2001:db8::200:5efe:127.0.0.1': 'loopback',
      // Plain IPv6 addresses keep their own class.
      '2606:4700:4700::1111': 'public',
      '::1': 'loopback',
      '::': 'reserved',
    };
    for (const [ip, cls] of Object.entries(cases)) expect(classifyAddress(ip), ip).toBe(cls);
    for (const ip of ['::ffff:0:127.0.0.1', '2002:7f00:1::', '64:ff9b::a00:1', '2001:0:1:2:3:4:80ff:fffe'])
      expect(isAddressAllowed(ip, closed), ip).toBe(false);
    expect(isAddressAllowed('2002:7f00:1::', open)).toBe(true);
  });
});

describe('checkUpstreamUrl', () => {
  const refused = (url: string, policy: UpstreamPolicy, reason: RegExp) => {
    const v = checkUpstreamUrl(url, policy);
    expect(v.ok, url).toBe(false);
    if (!v.ok) expect(v.reason, url).toMatch(reason);
  };

  it('refuses each always-refused class', () => {
    refused('ftp://example.com/', open, /scheme 'ftp'/);
    refused('file:///etc/passwd', open, /scheme 'file'/);
    refused('not a url', open, /valid absolute URL/);
    refused('http://user:pass@example.com/v1', open, /credentials/);
    refused('http://169.254.169.254/latest/meta-data', open, /metadata/);
    refused('http://169.254.10.1/', open, /link-local/);
    refused('http://[fe80::1]/', open, /link-local/);
    refused('http://[fd00:ec2::254]/', open, /metadata/);
    refused('http://metadata.google.internal/computeMetadata/v1/', open, /metadata host/);
    refused('http://METADATA/', open, /metadata host/);
    refused('http://metadata.google.internal./', open, /metadata host/);
    refused('http://0.0.0.0:8000/', open, /never allowed/);
    // Other spellings of 169.254.169.254 are normalised by the URL parser first.
    refused('http://2852039166/', open, /metadata/);
    refused('http://0xA9FEA9FE/', open, /metadata/);
    refused('http://169.254.169.254./', open, /metadata/);
    refused('http://[::ffff:169.254.169.254]/', open, /metadata/);
    refused('http://[::ffff:0:169.254.169.254]/', open, /metadata/);
    refused('http://[2002:a9fe:a9fe::]/', open, /metadata/);
  });

  it('refuses IPv4-translated, 6to4 and NAT64 spellings of private addresses when blocking them', () => {
    for (const url of [
      'http://[::ffff:0:127.0.0.1]:8000/v1',
      'http://[2002:7f00:1::]:8000/v1',
      'http://[64:ff9b::10.0.0.1]/v1',
      'http://[64:ff9b:1:7f00:0:100::]/v1',
    ]) {
      expect(checkUpstreamUrl(url, open).ok, url).toBe(true);
      refused(url, closed, /EVALGATE_BLOCK_PRIVATE_UPSTREAMS/);
    }
  });

  it('refuses loopback, private and localhost only when blocking private upstreams', () => {
    for (const url of [
      'http://127.0.0.1:8000/v1',
      'http://10.0.0.5/v1',
      'http://[::1]:11434/',
      'http://localhost:11434/v1',
    ]) {
      expect(checkUpstreamUrl(url, open).ok, url).toBe(true);
      refused(url, closed, /EVALGATE_BLOCK_PRIVATE_UPSTREAMS/);
    }
    expect(checkUpstreamUrl('https://api.example.com/v1', closed).ok).toBe(true);
  });

  it('restricts to the allow-list when one is set', () => {
    const policy: UpstreamPolicy = {
      blockPrivate: false,
      allowedHosts: ['vllm.internal', '*.example.com', '[::1]'],
    };
    expect(checkUpstreamUrl('http://vllm.internal:8000/v1', policy).ok).toBe(true);
    expect(checkUpstreamUrl('https://a.b.example.com/v1', policy).ok).toBe(true);
    expect(checkUpstreamUrl('http://[::1]:8000/v1', policy).ok).toBe(true);
    refused('https://example.com/v1', policy, /ALLOWED_UPSTREAM_HOSTS/);
    refused('http://evil.test/v1', policy, /ALLOWED_UPSTREAM_HOSTS/);
    // The allow-list never re-opens what is always refused.
    refused('http://169.254.169.254/', { ...policy, allowedHosts: ['169.254.169.254'] }, /metadata/);
  });
});

describe('checkUpstreamUrlResolved', () => {
  it('refuses a host name that resolves to a link-local or metadata address', async () => {
    const v = await checkUpstreamUrlResolved(
      'http://innocent.example/v1',
      open,
      resolvesTo('169.254.169.254'),
    );
    expect(v).toEqual({
      ok: false,
      reason: expect.stringMatching(/innocent\.example resolves to 169\.254\.169\.254/),
    });
    // One bad address among good ones is enough.
    const mixed = await checkUpstreamUrlResolved(
      'http://x.example/',
      open,
      resolvesTo('93.184.216.34', 'fe80::2'),
    );
    expect(mixed.ok).toBe(false);
  });

  it('applies the private-range switch to resolved addresses', async () => {
    expect((await checkUpstreamUrlResolved('http://gpu-box/', open, resolvesTo('10.0.0.7'))).ok).toBe(true);
    expect((await checkUpstreamUrlResolved('http://gpu-box/', closed, resolvesTo('10.0.0.7'))).ok).toBe(
      false,
    );
    expect(
      (await checkUpstreamUrlResolved('http://pub.example/', closed, resolvesTo('93.184.216.34'))).ok,
    ).toBe(true);
  });

  it('lets a name that does not resolve pass (the connect-time check still applies)', async () => {
    const failing: LookupFn = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    expect(await checkUpstreamUrlResolved('http://later.example/v1', closed, failing)).toEqual({ ok: true });
    // Literal addresses and the synchronous rules need no lookup.
    expect((await checkUpstreamUrlResolved('http://169.254.169.254/', open, failing)).ok).toBe(false);
  });
});

describe('registration applies the policy (422 at body.base_url)', () => {
  let h: Harness;
  let strict: Harness;
  beforeAll(async () => {
    h = await startHarness();
    strict = await startHarness({
      env: {
        EVALGATE_BLOCK_PRIVATE_UPSTREAMS: '1',
        EVALGATE_ALLOWED_UPSTREAM_HOSTS: 'api.example.com,localhost',
      },
    });
  });
  afterAll(async () => {
    await h.close();
    await strict.close();
  });

  it('refuses every always-refused class, and allows private upstreams by default', async () => {
    for (const url of [
      'http://169.254.169.254/v1',
      'http://[fe80::1]:8000/v1',
      'http://[fd00:ec2::254]/',
      'http://metadata.google.internal/v1',
      'http://0.0.0.0:8000/v1',
      'ftp://models.example/v1',
      'http://user:secret@127.0.0.1/v1',
    ]) {
      const res = await h.call('POST', '/v1/models', { body: { label: 'refused', base_url: url } });
      expect(res.status, url).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'base_url'], type: 'upstream_refused' });
      expect(res.body.detail[0].msg, url).toMatch(/^base_url refused: /);
    }
    const local = await h.call('POST', '/v1/models', {
      body: { label: 'ollama', base_url: 'http://localhost:11434/v1' },
    });
    expect(local.status).toBe(201);
    const patched = await h.call('PATCH', '/v1/models/ollama', {
      body: { base_url: 'http://169.254.169.254/' },
    });
    expect(patched.status).toBe(422);
    expect(patched.body.detail[0].loc).toEqual(['body', 'base_url']);
  });

  it('refuses private upstreams and hosts off the allow-list when the operator says so', async () => {
    // An allow-list entry re-opens what it names, private or not.
    const named = await strict.call('POST', '/v1/models', {
      body: { label: 'named', base_url: 'http://localhost:11434/v1' },
    });
    expect(named.status).toBe(201);
    for (const url of ['http://127.0.0.1:8000/v1', 'http://10.0.0.5/v1', 'http://other.example/v1']) {
      const res = await strict.call('POST', '/v1/models', { body: { label: 'refused', base_url: url } });
      expect(res.status, url).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'base_url']);
    }
  });

  it('refuses a host name resolving to a link-local address at registration', async () => {
    const ctx = {
      ...h.app.services.models,
      checkUpstream: (url: string) =>
        checkUpstreamUrlResolved(url, h.config.upstreamPolicy, resolvesTo('169.254.169.254')),
    };
    const attempt = registerModel(ctx, h.admin.projectId, {
      label: 'rebind',
      base_url: 'http://rebind.example/v1',
    });
    await expect(attempt).rejects.toBeInstanceOf(ApiError);
    await expect(attempt).rejects.toMatchObject({
      status: 422,
      issues: [{ loc: ['body', 'base_url'], type: 'upstream_refused' }],
    });
    expect((await h.call('GET', '/v1/models/rebind')).status).toBe(404);
  });

  it('refuses IPv4-embedding spellings of loopback at registration when private upstreams are blocked', async () => {
    const ctx = {
      ...h.app.services.models,
      checkUpstream: (url: string) => checkUpstreamUrlResolved(url, closed),
    };
    for (const [label, url] of [
      ['translated', 'http://[::ffff:0:127.0.0.1]:8000/v1'],
      ['sixtofour', 'http://[2002:7f00:1::]:8000/v1'],
    ] as const) {
      const attempt = registerModel(ctx, h.admin.projectId, { label, base_url: url });
      await expect(attempt, url).rejects.toMatchObject({
        status: 422,
        issues: [{ loc: ['body', 'base_url'], type: 'upstream_refused' }],
      });
      expect((await h.call('GET', `/v1/models/${label}`)).status).toBe(404);
    }
  });
});
