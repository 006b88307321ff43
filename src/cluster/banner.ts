import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import { dashboardBanner } from '../dashboard/local-sign-in.js';
import { listeningUrl } from '../dashboard/public-url.js';
import type { Database } from '../db/schema.js';
import { FIRST_KEY_FILE, writeCredentialFile } from '../shared/credential-files.js';

/**
 * What `evalgate serve` prints once it listens, as one string (written at once, so that whoever reads
 * the address also gets the key): the address, the first project's key when it was just created (`key`),
 * and the dashboard's lines. `workers`: the process count of `serve --workers N`. `credentialFiles`
 * (JSON logs): the key and the sign-in link go to files in the data directory, readable by their owner
 * only, and the banner names the files: a log keeps no credential.
 */
export async function serveBanner(
  services: { config: Config; db: Kysely<Database> },
  port: number,
  key: string | null,
  options: { workers?: number; credentialFiles?: boolean } = {},
): Promise<string> {
  const { workers } = options;
  const credentialDir = options.credentialFiles ? services.config.dataDir : undefined;
  const { config } = services;
  const db = config.databaseUrl.startsWith('sqlite:') ? config.databaseUrl : 'postgres';
  const address = `http://${config.host}:${port}`;
  const processes = workers === undefined ? '' : `, workers: ${workers}`;
  let banner = `Evalgate listening on ${address} (database: ${db}, executor: ${config.runs.executor}${processes})\n`;
  const policy = config.upstreamPolicy;
  // An allow-list decides alone which upstreams are reached (private ones only where it names them).
  if (policy.allowedHosts) {
    banner += `Upstreams allowed: only ${policy.allowedHosts.join(', ')}\n`;
  } else if (!policy.blockPrivate) {
    banner +=
      'Registered models may point at loopback and private-network addresses ' +
      '(EVALGATE_BLOCK_PRIVATE_UPSTREAMS=0; set it to 1 to refuse them)\n';
  }
  if (key && credentialDir !== undefined) {
    const file = writeCredentialFile(credentialDir, FIRST_KEY_FILE, key);
    banner += `Created project 'default' with an API key, written to ${file} (readable by this user only): keep it\n`;
  } else if (key) {
    banner +=
      `Created project 'default' with an API key. It is shown only once; keep it:\n\n  ${key}\n\n` +
      `Try: curl -H 'Authorization: Bearer ${key}' ${address}/v1/evaluators\n`;
  }
  if (key) {
    if (config.dashboard.providers.length > 0) {
      const admin = config.dashboard.adminEmail;
      banner += admin
        ? `Organization 'default' has no owner yet: ${admin} becomes its owner when signing in (EVALGATE_ADMIN_EMAIL)\n`
        : "Organization 'default' has no owner yet: the first user to sign in through a provider becomes its " +
          'owner (set EVALGATE_ADMIN_EMAIL to name who)\n';
    }
  }
  return banner + (await dashboardBanner(services, listeningUrl(config.host, port), credentialDir));
}
