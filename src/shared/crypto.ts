import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Credentials of registered models at rest: AES-256-GCM under the server's secret key
 * (`EVALGATE_SECRET_KEY`, or `secret-key` in the data directory). The stored text is
 * `v1:` + base64(12-byte IV | 16-byte tag | ciphertext); the model id is bound in as additional data, so a
 * ciphertext copied onto another model row does not decrypt.
 */
const VERSION = 'v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** 32 bytes given as 64 hex digits or as base64 / base64url; throws on anything else. */
export function decodeSecretKey(text: string): Buffer {
  const t = text.trim();
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(t)) key = Buffer.from(t, 'hex');
  else if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) key = Buffer.from(t, 'base64');
  if (key?.length !== 32) {
    throw new Error('the secret key must be 32 bytes, written as 64 hex digits or in base64');
  }
  return key;
}

export function encryptSecret(key: Buffer, plaintext: string, context: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return VERSION + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

/** Throws when the text was not sealed with this key and context (wrong key, tampering, another row). */
export function decryptSecret(key: Buffer, sealed: string, context: string): string {
  if (!sealed.startsWith(VERSION)) throw new Error('unknown credential format');
  const raw = Buffer.from(sealed.slice(VERSION.length), 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('truncated credential');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
    'utf8',
  );
}

/** What responses may show of a credential: its last four characters, only when that gives little away. */
export function lastFour(secret: string): string | null {
  return secret.length >= 12 ? secret.slice(-4) : null;
}
