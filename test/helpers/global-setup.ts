import { execSync } from 'node:child_process';

/** Tests import the compiled runner script paths from src/, so nothing is built here; just check services. */
export default async function setup(): Promise<void> {
  if (process.env.EVALGATE_TEST_DB === 'sqlite') return;
  try {
    execSync('pg_isready -h 127.0.0.1 -p 5432', { stdio: 'ignore' });
  } catch {
    throw new Error(
      'PostgreSQL is not answering on 127.0.0.1:5432; start it or run with EVALGATE_TEST_DB=sqlite',
    );
  }
}
