import fs from 'node:fs';
import path from 'node:path';

/**
 * Where `evalgate serve --log-format json` puts the credentials a human banner prints (the first API key,
 * the dashboard's one-time sign-in link): files in the data directory that only its owner reads, so that
 * they never reach a log collector (`docker logs`, journald, a log pipeline).
 */
export const FIRST_KEY_FILE = 'first-api-key';
export const SIGN_IN_LINK_FILE = 'sign-in-link';

/** Writes `value` to `dataDir/name` (mode 0600, replaced atomically); returns the file's path. */
export function writeCredentialFile(dataDir: string, name: string, value: string): string {
  fs.mkdirSync(dataDir, { recursive: true });
  const target = path.join(dataDir, name);
  const temp = `${target}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${value}\n`, { mode: 0o600 });
  fs.renameSync(temp, target);
  return target;
}
