/** Where the dashboard's own endpoints live; nothing under it accepts an API key. */
export const DASHBOARD_API = '/dashboard/api';

/**
 * Whether a path is one of the web app's pages or assets (`CLIENT_ROUTES` and /assets/ of dashboard/web.ts:
 * the root page, and everything whose first segment is one of theirs), which an instance made on the first
 * such request serves (src/http/lazy-prefix.ts).
 */
export function isDashboardPage(path: string): boolean {
  if (path === '/') return true;
  const end = path.indexOf('/', 1);
  const first = end === -1 ? path.slice(1) : path.slice(1, end);
  return (
    first === 'signin' || first === 'assets' || first === 'invite' || first === 'orgs' || first === 'projects'
  );
}
