/** Polls until `check` holds, failing after `ms`. */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  ms = 10_000,
  what = 'condition',
): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${what} not met within ${ms} ms`);
}
