/**
 * Issue 15: a database that is away is an outage (503 `upstream_unavailable`, naming the database), not
 * a bug (500): PostgreSQL's connection errors and SQLite's SQLITE_BUSY after its busy timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/database.js';
import { toApiError } from '../../src/http/error-handler.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';

function driverError(message: string, code?: string): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

const OUTAGES = [
  driverError('terminating connection due to administrator command', '57P01'),
  driverError('terminating connection because of crash of another server process', '57P02'),
  driverError('the database system is starting up', '57P03'),
  driverError('the database system is shutting down', '57P03'),
  driverError('connection failure', '08006'),
  driverError('server closed the connection unexpectedly', '08003'),
  driverError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
  driverError('read ECONNRESET', 'ECONNRESET'),
  driverError('Connection terminated unexpectedly'),
  driverError('Client has encountered a connection error and is not queryable'),
  driverError('timeout exceeded when trying to connect'),
  driverError('database "x" is not currently accepting connections', '55000'),
  driverError('database is locked', 'SQLITE_BUSY'),
];

const BUGS = [
  driverError('duplicate key value violates unique constraint', '23505'),
  driverError('syntax error at or near "selec"', '42601'),
  driverError('cannot update sequence', '55000'),
  driverError('UNIQUE constraint failed: containers.id', 'SQLITE_CONSTRAINT_PRIMARYKEY'),
  new TypeError("Cannot read properties of undefined (reading 'id')"),
];

describe('database errors at the HTTP edge', () => {
  it.each(OUTAGES.map((e) => [e.message, e]))('answers 503 for "%s"', (_message, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
    const e = toApiError(err, 'req-1');
    expect(e.status).toBe(503);
    expect(e.code).toBe('upstream_unavailable');
    expect(e.details).toEqual({ dependency: 'database', request_id: 'req-1' });
    expect(e.message).not.toContain((err as Error).message);
  });

  it.each(BUGS.map((e) => [e.message, e]))('keeps 500 for "%s"', (_message, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
    const e = toApiError(err, 'req-2');
    expect(e.status).toBe(500);
    expect(e.code).toBe('internal_error');
  });
});

// A write waits for SQLite's busy timeout (5 s), then answers 503 rather than 500.
describe.skipIf(testDbKind() !== 'sqlite')('SQLite locked past its busy timeout', () => {
  let h: Harness;
  beforeAll(async () => {
    // No run executor: its own writes would wait on the lock too.
    h = await startHarness({ env: { EVALGATE_SERVE_EXECUTES: '0' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers 503 upstream_unavailable naming the database, then serves again', {
    timeout: 30_000,
  }, async () => {
    expect((await h.call('GET', '/v1/containers')).status).toBe(200);
    const { default: SQLite } = await import('better-sqlite3');
    const blocker = new SQLite(h.database.url.slice('sqlite:'.length));
    blocker.exec('BEGIN EXCLUSIVE');
    try {
      const res = await h.call('POST', '/v1/containers', { body: { label: 'locked-out' } });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('upstream_unavailable');
      expect(res.body.error.details.dependency).toBe('database');
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
    }
    expect((await h.call('POST', '/v1/containers', { body: { label: 'let-in' } })).status).toBe(201);
  });
});
