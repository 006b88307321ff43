/**
 * What the dashboard's browser tests share: Chromium (through playwright-core, the system's binary),
 * the two widths every page is checked at, the check that nothing is wider than the screen, an API
 * caller with a project key, and signing in through a loopback OpenID provider then creating an
 * organization and a project from the pages.
 */
import fs from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = fs.existsSync(CHROMIUM);
export const WIDE = { width: 1440, height: 900 };
export const PHONE = { width: 390, height: 844 };

/** Headless Chromium, without the background traffic a test has no use for. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** Nothing on the page is wider than the screen (tables scroll in their own box). */
export async function fitsWidth(page: Page): Promise<void> {
  // Evaluated in the page (the tests compile without the DOM library).
  const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
  // What sticks out, outside the tables (which scroll in their own box).
  const wide = await page.evaluate<string[]>(
    `[...document.querySelectorAll('body *')]
      .filter((e) => !e.closest('table') && Math.ceil(e.getBoundingClientRect().right) > window.innerWidth)
      .slice(0, 5).map((e) => e.tagName + '.' + e.className)`,
  );
  expect(overflow, `wider than the screen: ${wide.join(', ')}`).toBeLessThanOrEqual(0);
}

/** The page checked at both widths (each given a moment to lay out), left at the wide one. */
export async function fitsBothWidths(page: Page, atEach?: () => Promise<void>): Promise<void> {
  for (const size of [WIDE, PHONE]) {
    await page.setViewportSize(size);
    await page.waitForTimeout(100);
    await fitsWidth(page);
    await atEach?.();
  }
  await page.setViewportSize(WIDE);
}

export type ApiCall = (method: string, url: string, body?: unknown) => Promise<any>;

/** Calls the API at `base` with the key `key()` gives at call time; any answer of 300 or more fails. */
export function apiCaller(base: () => string, key: () => string): ApiCall {
  return async (method, url, body) => {
    const res = await fetch(`${base()}${url}`, {
      method,
      headers: { authorization: `Bearer ${key()}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    expect(res.status, JSON.stringify(json)).toBeLessThan(300);
    return json;
  };
}

/** On the sign-in page: through `provider` as `login`, until the Organizations page shows. */
export async function signInAt(page: Page, provider: string, login: string): Promise<void> {
  await page.getByRole('link', { name: `Sign in with ${provider}` }).click();
  await page.getByLabel('Login').fill(login);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('heading', { name: 'Organizations' }).waitFor();
}

/**
 * From the server's front page: signs in through Provider A as `login`, creates the organization and
 * the project from the pages, and answers the project's URL in the dashboard.
 */
export async function signInWithProject(
  page: Page,
  base: string,
  names: { login: string; org: string; project: string },
): Promise<string> {
  await page.goto(`${base}/`);
  await page.waitForURL(`${base}/signin`);
  await signInAt(page, 'Provider A', names.login);
  await page.getByLabel('Name').fill(names.org);
  await page.getByRole('button', { name: 'Create organization' }).click();
  await page.getByRole('heading', { name: new RegExp(`^${names.org}`) }).waitFor();
  await page.getByLabel('Project name').fill(names.project);
  await page.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL(/\/projects\/prj_[^/]+\/settings$/);
  return page.url().replace(/\/settings$/, '');
}
