import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A server secret kept in the data directory: read when present, otherwise generated once (mode 0600).
 * Creation is exclusive, so two processes starting together end up with the same secret.
 */
export function loadOrCreateSecret(dataDir: string, file: string): string {
  const target = path.join(dataDir, file);
  try {
    return fs.readFileSync(target, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  try {
    fs.writeFileSync(target, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return fs.readFileSync(target, 'utf8').trim();
    throw err;
  }
}

/** The secret mixed into API key hashes: the operator's (EVALGATE_KEY_PEPPER), or the data directory's own. */
export function keyPepper(settings: { keyPepper: string | null; dataDir: string }): string {
  return settings.keyPepper ?? loadOrCreateSecret(settings.dataDir, 'key-pepper');
}
