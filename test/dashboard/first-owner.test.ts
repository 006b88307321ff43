import { afterEach, describe, expect, it } from 'vitest';
import { bootstrapIfEmpty } from '../../src/tenancy/bootstrap.js';
import { type DashboardSetup, dashboardCall, signIn, startDashboard } from './helpers.js';

/*
 * With identity providers, the `default` organization of the first start (whose project holds the printed
 * key) gets an owner: the first user to sign in through a provider, or the one EVALGATE_ADMIN_EMAIL names.
 */
let s: DashboardSetup | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

async function orgNames(session: Awaited<ReturnType<typeof signIn>>): Promise<string[]> {
  const res = await dashboardCall(s!.h, session, 'GET', '/orgs');
  expect(res.status).toBe(200);
  return res.body.data.map((o: { name: string; role: string }) => `${o.name}:${o.role}`);
}

describe('the default organization with identity providers', () => {
  it('is owned by the first user to sign in through a provider, and by nobody else', async () => {
    s = await startDashboard();
    // The harness's keys belong to projects of the `default` organization, as the first start's key does.
    const { db, pepper } = s.h.services;
    expect(await bootstrapIfEmpty(db, pepper)).toBeNull();
    const first = await signIn(s.h, 'a', 'first-user');
    expect(await orgNames(first)).toContain('default:owner');
    const orgs = await dashboardCall(s.h, first, 'GET', '/orgs');
    const mine = orgs.body.data.find((o: { name: string }) => o.name === 'default');
    expect(mine.projects.map((p: { name: string }) => p.name)).toContain('main');
    // Signing in again keeps it so; nobody else becomes its owner.
    expect(await orgNames(await signIn(s.h, 'a', 'first-user'))).toContain('default:owner');
    const second = await signIn(s.h, 'b', 'second-user');
    expect(await orgNames(second)).not.toContain('default:owner');
    expect(await orgNames(second)).not.toContain('default:member');
  });

  it('is owned by the user whose verified e-mail EVALGATE_ADMIN_EMAIL names, not by the first to sign in', async () => {
    s = await startDashboard({ EVALGATE_ADMIN_EMAIL: 'Boss@Example.com' });
    const early = await signIn(s.h, 'a', 'early-bird');
    expect(await orgNames(early)).not.toContain('default:owner');
    const boss = await signIn(s.h, 'b', 'boss');
    expect(boss.user.email).toBe('boss@example.com');
    expect(await orgNames(boss)).toContain('default:owner');
  });
});
