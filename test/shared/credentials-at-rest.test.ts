// Database-independent: sealing credentials is pure cryptography over values handed in.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeSecretKey, decryptSecret, encryptSecret, lastFour } from '../../src/shared/crypto.js';

const key = randomBytes(32);

describe('decodeSecretKey', () => {
  it('reads 32 bytes written as hex, base64 or base64url', () => {
    expect(decodeSecretKey(key.toString('hex'))).toEqual(key);
    expect(decodeSecretKey(` ${key.toString('base64')}\n`)).toEqual(key);
    expect(decodeSecretKey(key.toString('base64url'))).toEqual(key);
  });

  it('refuses a key of another length or spelling', () => {
    const message = 'the secret key must be 32 bytes, written as 64 hex digits or in base64';
    expect(() => decodeSecretKey(randomBytes(16).toString('hex'))).toThrow(message);
    expect(() => decodeSecretKey(randomBytes(31).toString('base64'))).toThrow(message);
    expect(() => decodeSecretKey('not a key!')).toThrow(message);
    expect(() => decodeSecretKey('')).toThrow(message);
  });
});

describe('encryptSecret / decryptSecret', () => {
  it('opens what it sealed, with a fresh IV each time', () => {
    const a = encryptSecret(key, 'sk-live-0123456789', 'mdl_1');
    const b = encryptSecret(key, 'sk-live-0123456789', 'mdl_1');
    expect(a).toMatch(/^v1:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('sk-live');
    expect(decryptSecret(key, a, 'mdl_1')).toBe('sk-live-0123456789');
    expect(decryptSecret(key, b, 'mdl_1')).toBe('sk-live-0123456789');
    expect(decryptSecret(key, encryptSecret(key, '', 'mdl_1'), 'mdl_1')).toBe('');
  });

  it('does not open under another key or for another model row', () => {
    const sealed = encryptSecret(key, 'secret', 'mdl_1');
    expect(() => decryptSecret(randomBytes(32), sealed, 'mdl_1')).toThrow();
    expect(() => decryptSecret(key, sealed, 'mdl_2')).toThrow();
  });

  it('refuses a tampered, truncated or unknown text', () => {
    const sealed = encryptSecret(key, 'secret', 'mdl_1');
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => decryptSecret(key, `v1:${raw.toString('base64')}`, 'mdl_1')).toThrow();
    expect(() => decryptSecret(key, `v1:${Buffer.alloc(20).toString('base64')}`, 'mdl_1')).toThrow(
      'truncated credential',
    );
    expect(() => decryptSecret(key, 'v2:abcd', 'mdl_1')).toThrow('unknown credential format');
  });
});

describe('lastFour', () => {
  it('shows the last four characters only of a credential of 12 or more', () => {
    expect(lastFour('sk-abcdefgh1234')).toBe('1234');
    expect(lastFour('abcdefghijkl')).toBe('ijkl');
    expect(lastFour('short-key12')).toBeNull();
  });
});
