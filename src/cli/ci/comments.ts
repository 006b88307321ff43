/**
 * The pull-request comment: one per experiment and pull request, found again by a hidden marker
 * (`<!-- evalgate-ci:NAME -->`) and updated in place on every push. GitHub through its REST API (issue
 * comments, paginated by the Link header), GitLab through merge-request notes. A refusal (401, 403, …)
 * is a CommentError: reported, never a change of the gate's exit code.
 */

export type CommentProvider = 'github' | 'gitlab';

export class CommentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommentError';
  }
}

export interface CommentResult {
  action: 'created' | 'updated';
  url: string | null;
}

type Env = Record<string, string | undefined>;

export const marker = (experiment: string): string => `<!-- evalgate-ci:${experiment} -->`;

/** The URL of the Link header's rel="next", if any. */
export function nextLink(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(',')) {
    const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (m) return m[1]!;
  }
  return null;
}

async function call(
  what: string,
  url: string,
  init: { method?: string; headers: Record<string, string>; body?: unknown },
  hint: string,
): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? 'GET',
      headers: {
        ...init.headers,
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new CommentError(`${what}: ${(err as Error).message}`);
  }
  if (res.ok) return res;
  const text = await res.text().catch(() => '');
  let message = text.slice(0, 300);
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === 'string') message = parsed.message;
    else if (parsed.message !== undefined) message = JSON.stringify(parsed.message);
  } catch {
    // Not JSON: the text as it is.
  }
  const why = res.status === 401 || res.status === 403 || res.status === 404 ? ` (${hint})` : '';
  throw new CommentError(`${what}: ${res.status} ${message}${why}`);
}

async function upsert(
  target: {
    list: string;
    create: string;
    update: (id: number) => string;
    updateMethod: 'PATCH' | 'PUT';
    headers: Record<string, string>;
    hint: string;
    urlOf: (c: Record<string, unknown>) => string | null;
  },
  experiment: string,
  body: string,
): Promise<CommentResult> {
  const tag = marker(experiment);
  let url: string | null = target.list;
  let found: Record<string, unknown> | null = null;
  while (url && !found) {
    const res = await call('listing comments', url, { headers: target.headers }, target.hint);
    const page = (await res.json()) as Record<string, unknown>[];
    found = page.find((c) => typeof c.body === 'string' && c.body.includes(tag)) ?? null;
    url = nextLink(res.headers.get('link'));
  }
  const text = `${tag}\n${body}`;
  if (found) {
    const res = await call(
      'updating the comment',
      target.update(Number(found.id)),
      { method: target.updateMethod, headers: target.headers, body: { body: text } },
      target.hint,
    );
    return { action: 'updated', url: target.urlOf((await res.json()) as Record<string, unknown>) };
  }
  const res = await call(
    'creating the comment',
    target.create,
    { method: 'POST', headers: target.headers, body: { body: text } },
    target.hint,
  );
  return { action: 'created', url: target.urlOf((await res.json()) as Record<string, unknown>) };
}

function required(env: Env, names: string[], provider: string): string[] {
  const missing = names.filter((n) => !env[n]);
  if (missing.length > 0) throw new CommentError(`a ${provider} comment needs ${missing.join(', ')}`);
  return names.map((n) => env[n]!);
}

export async function githubComment(
  env: Env,
  pullRequest: number | null,
  experiment: string,
  body: string,
): Promise<CommentResult> {
  const [token, repository] = required(env, ['GITHUB_TOKEN', 'GITHUB_REPOSITORY'], 'GitHub');
  if (pullRequest === null)
    throw new CommentError('no pull request: GITHUB_EVENT_PATH and GITHUB_REF name none');
  const api = (env.GITHUB_API_URL || 'https://api.github.com').replace(/\/+$/, '');
  const repo = `${api}/repos/${repository}`;
  return upsert(
    {
      list: `${repo}/issues/${pullRequest}/comments?per_page=100`,
      create: `${repo}/issues/${pullRequest}/comments`,
      update: (id) => `${repo}/issues/comments/${id}`,
      updateMethod: 'PATCH',
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
        'user-agent': 'evalgate-ci',
      },
      hint: 'the token needs the pull-requests: write permission; pull requests from forks get a read-only token',
      urlOf: (c) => (typeof c.html_url === 'string' ? c.html_url : null),
    },
    experiment,
    body,
  );
}

export async function gitlabComment(
  env: Env,
  mergeRequest: number | null,
  experiment: string,
  body: string,
): Promise<CommentResult> {
  const [api, project] = required(env, ['CI_API_V4_URL', 'CI_PROJECT_ID'], 'GitLab');
  if (mergeRequest === null) throw new CommentError('no merge request: CI_MERGE_REQUEST_IID is not set');
  const token = env.EVALGATE_GITLAB_TOKEN || env.GITLAB_TOKEN;
  if (!token)
    throw new CommentError(
      'a GitLab note needs a token with the api scope in EVALGATE_GITLAB_TOKEN or GITLAB_TOKEN',
    );
  const base = `${api!.replace(/\/+$/, '')}/projects/${encodeURIComponent(project!)}/merge_requests/${mergeRequest}/notes`;
  const web = env.CI_PROJECT_URL ? `${env.CI_PROJECT_URL}/-/merge_requests/${mergeRequest}` : null;
  return upsert(
    {
      list: `${base}?per_page=100`,
      create: base,
      update: (id) => `${base}/${id}`,
      updateMethod: 'PUT',
      headers: { 'private-token': token, 'user-agent': 'evalgate-ci' },
      hint: 'the token needs the api scope and at least the Reporter role on the project',
      urlOf: (c) => (web && c.id !== undefined ? `${web}#note_${String(c.id)}` : null),
    },
    experiment,
    body,
  );
}

/** `--comment auto`: the provider of the CI job, when it runs for a pull (merge) request. */
export function autoProvider(env: Env): CommentProvider | null {
  if (env.GITHUB_ACTIONS === 'true') return 'github';
  if (env.GITLAB_CI === 'true') return 'gitlab';
  return null;
}
