// Database-independent: a browser walk-through of an invitation link; the links' rules and refusals run on both databases in invite-links.test.ts (the other browser tests are SQLite-only too).
/**
 * Invitation by link in a real browser (Chromium through playwright-core) against a real server without
 * identity providers: the operator (signed in by the one-time link) makes a reviewer's link on the
 * organization page; a second browser opens it, chooses a name and password, and lands in the project
 * where a reviewer sees Review only; the link is then refused; the new account signs in again with its
 * password; the operator's list shows the link used.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueLocalSignInLink } from '../../src/dashboard/local-sign-in.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { fitsBothWidths, hasChromium, launchChromium, WIDE } from './browser-kit.js';
import { ensureWebBuilt } from './helpers.js';

const LONG = 60_000;
let h: Harness;
let browser: Browser;
let operator: Page;
let org = '';
let link = '';
const contexts: BrowserContext[] = [];

async function freshPage(): Promise<Page> {
  const ctx = await browser.newContext({ viewport: WIDE });
  contexts.push(ctx);
  return ctx.newPage();
}

describe.skipIf(!hasChromium)('an invitation link in a browser', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    h = await startHarness();
    browser = await launchChromium();
    operator = await freshPage();
    await operator.goto(await issueLocalSignInLink(h.services.db, h.url));
    await operator.getByRole('heading', { name: 'Organizations' }).waitFor({ timeout: LONG });
    const orgs = await h.services.db.selectFrom('organizations').select(['id', 'name']).execute();
    org = orgs.find((o) => o.name === 'default')?.id ?? '';
  }, 120_000);
  afterAll(async () => {
    for (const ctx of contexts) await ctx.close();
    await browser?.close();
    await h?.close();
  });

  it('is made by an owner on the organization page, for a role and a project', async () => {
    await operator.goto(`${h.url}/orgs/${org}`);
    const section = operator.getByRole('region', { name: 'Invitation links' });
    await section.getByLabel('Joins as').selectOption('reviewer');
    await section.getByLabel('Valid for days').fill('3');
    await section.getByLabel('Lands on').selectOption({ label: 'main' });
    await section.getByRole('button', { name: 'Create link' }).click();
    const shown = section.getByLabel('Invitation link');
    await shown.waitFor({ timeout: LONG });
    link = await shown.inputValue();
    expect(link).toMatch(new RegExp(`^${h.url}/invite/[\\w-]{43}$`));
    await expect.poll(() => section.locator('tbody tr').count(), { timeout: LONG }).toBe(1);
    expect(await section.locator('tbody tr').first().textContent()).toMatch(/reviewer\s*main\s*pending/);
    await fitsBothWidths(operator);
  });

  it('lets a new person choose a name and password and lands them in the project as a reviewer', async () => {
    const guest = await freshPage();
    await guest.goto(link);
    await guest.getByText('You are invited to main (default) as a reviewer').waitFor({ timeout: LONG });
    await fitsBothWidths(guest);
    await guest.getByLabel('Sign-in name').fill('rita');
    await guest.getByLabel('Password (at least 12 characters)').fill('correct horse battery');
    await guest.getByLabel('Password again').fill('correct horse battery');
    await guest.getByRole('button', { name: 'Create account and join' }).click();
    await guest.waitForURL(new RegExp(`/projects/${h.admin.projectId}$`), { timeout: LONG });
    const nav = guest.getByRole('navigation', { name: 'Project' });
    await nav.getByRole('link', { name: 'Review' }).waitFor({ timeout: LONG });
    expect(await nav.getByRole('link').allInnerTexts()).toEqual(['Review']);
    await expect
      .poll(() => guest.locator('.who').textContent(), { timeout: LONG })
      .toContain('Name and password');

    // Signed out, the account signs in again with its name and password.
    await guest.getByRole('button', { name: 'Sign out' }).click();
    await guest.getByLabel('Sign-in name').fill('rita');
    await guest.getByLabel('Password', { exact: true }).fill('wrong password here');
    await guest.getByRole('button', { name: 'Sign in' }).click();
    await guest.getByRole('alert').getByText('Wrong name or password').waitFor({ timeout: LONG });
    await guest.getByLabel('Password', { exact: true }).fill('correct horse battery');
    await guest.getByRole('button', { name: 'Sign in' }).click();
    await guest.getByRole('heading', { name: 'Organizations' }).waitFor({ timeout: LONG });
    expect(await guest.getByRole('link', { name: 'main' }).count()).toBe(1);
  });

  it('refuses the link once used, in another browser and in the owner’s list', async () => {
    const late = await freshPage();
    await late.goto(link);
    await late
      .getByRole('alert')
      .getByText('This invitation link was already used')
      .waitFor({ timeout: LONG });
    expect(await late.getByLabel('Sign-in name').count()).toBe(0);
    await operator.goto(`${h.url}/orgs/${org}`);
    const section = operator.getByRole('region', { name: 'Invitation links' });
    await expect
      .poll(() => section.locator('tbody tr').first().textContent(), { timeout: LONG })
      .toMatch(/used/);
    expect(await section.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
  });
});
