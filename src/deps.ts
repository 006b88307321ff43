import type { Kysely } from 'kysely';
import type { Authenticator } from './auth/authenticator.js';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/database.js';
import type { Database } from './db/schema.js';
import type { ProviderLayer } from './inference/provider-layer.js';
import type { LogWriter } from './inference/recording/types.js';
import type { RateLimiter } from './ratelimit/limiter.js';

/** Everything a feature needs, built once by the composition root (app.ts) and passed down. */
export interface Deps {
  config: Config;
  database: DatabaseHandle;
  db: Kysely<Database>;
  auth: Authenticator;
  limiter: RateLimiter;
  /** The secret mixed into API key hashes. */
  pepper: string;
  /** 32-byte master key sealing stored credentials (registered models' api_key). */
  secretKey: Buffer;
  /** The process's one task log writer (batched, off the request path). */
  logWriter: LogWriter;
  /** Calls any resolved model (the gateway route, judges and generation); records nothing itself. */
  providers: ProviderLayer;
}
