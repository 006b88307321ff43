/**
 * `npm ci` (npm 11) wants a lock entry for every optional platform package a dependency names, but a
 * registry mirror that serves only this platform's packages leaves them out of the lock. This adds each
 * missing entry with its platform (os/cpu from the package name), so installs elsewhere skip it.
 *
 *   npm ci 2> ci.log; node scripts/repair-lockfile.mjs ci.log
 */
import fs from 'node:fs';

const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'));
// No "Missing:" lines (nothing to repair): match gives null.
const missing = (
  fs.readFileSync(process.argv[2], 'utf8').match(/Missing: (\S+?)@ from lock file/g) ?? []
).map((m) => m.slice(9, -15).replace(/@$/, ''));
const OS = new Set(['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'win32', 'openharmony']);
for (const name of missing) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  const parent = Object.values(lock.packages).find((v) => v.optionalDependencies?.[name]);
  if (!parent) {
    console.log('no parent for', name);
    continue;
  }
  // The platform is the first known OS among the name's dash-separated parts, the CPU the part after it
  // (`rollup-linux-x64-gnu`, `msgpackr-extract-darwin-arm64`).
  const parts = name.split('/').pop().split('-');
  const at = parts.findIndex((p) => OS.has(p));
  const os = at >= 0 ? parts[at] : undefined;
  const cpu = at >= 0 ? parts[at + 1] : undefined;
  const entry = { version: parent.optionalDependencies[name] };
  if (cpu) entry.cpu = [cpu];
  if (os) entry.os = [os];
  if (/musl/.test(name)) entry.libc = ['musl'];
  else if (/gnu/.test(name) && os === 'linux') entry.libc = ['glibc'];
  if (parent.dev) entry.dev = true;
  entry.optional = true;
  lock.packages[key] = entry;
  console.log('added', key, JSON.stringify(entry));
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
fs.writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
