// Database-independent: the pull-request comments go to loopback GitHub and GitLab servers; the Evalgate side is the CLI's.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';
import { experimentFile, seedCi } from './ci-helpers.js';
import { evalgate } from './cli-helpers.js';

/**
 * The pull-request comment of `evalgate ci` against loopback servers that answer as GitHub's REST API
 * (issue comments, Link pagination, 401/403 with GitHub's error bodies) and GitLab's merge-request notes.
 */

interface Note {
  id: number;
  body: string;
}

interface FakeForge {
  url: string;
  notes: Note[];
  calls: string[];
  close(): Promise<void>;
}

const PAGE = 2;

/**
 * A forge on loopback. `listPath` lists (PAGE per page, Link rel="next"), POST on it creates, `updateMethod`
 * on `${itemPrefix}/ID` updates. Tokens: 'good' may do everything, 'readonly' may only list, others get 401.
 */
async function startForge(options: {
  listPath: string;
  itemPrefix: string;
  updateMethod: 'PATCH' | 'PUT';
  token: (req: http.IncomingMessage) => string | undefined;
  urlOf: (id: number) => Record<string, unknown>;
}): Promise<FakeForge> {
  const notes: Note[] = [
    { id: 1, body: 'Looks good to me' },
    { id: 2, body: '<!-- evalgate-ci:other -->\nanother experiment' },
    { id: 3, body: 'Please rebase' },
  ];
  const calls: string[] = [];
  let next = 100;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      calls.push(`${req.method} ${url.pathname}${url.search}`);
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      const token = options.token(req);
      if (token !== 'good' && token !== 'readonly') return send(401, { message: 'Bad credentials' });
      const write = req.method !== 'GET';
      if (write && token === 'readonly')
        return send(403, { message: 'Resource not accessible by integration' });
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as { body: string }) : null;
      if (url.pathname === options.listPath && req.method === 'GET') {
        const page = Number(url.searchParams.get('page') ?? 1);
        const slice = notes.slice((page - 1) * PAGE, page * PAGE);
        const more = page * PAGE < notes.length;
        const nextUrl = new URL(`http://${req.headers.host}${url.pathname}${url.search}`);
        nextUrl.searchParams.set('page', String(page + 1));
        return send(200, slice, more ? { link: `<${nextUrl}>; rel="next"` } : {});
      }
      if (url.pathname === options.listPath && req.method === 'POST' && body) {
        const note = { id: next++, body: body.body };
        notes.push(note);
        return send(201, { ...note, ...options.urlOf(note.id) });
      }
      const m = new RegExp(`^${options.itemPrefix}/(\\d+)$`).exec(url.pathname);
      if (m && req.method === options.updateMethod && body) {
        const note = notes.find((n) => n.id === Number(m[1]));
        if (!note) return send(404, { message: 'Not Found' });
        note.body = body.body;
        return send(200, { ...note, ...options.urlOf(note.id) });
      }
      send(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    notes,
    calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let h: Harness;
let mock: MockUpstream;
let dir: string;
let github: FakeForge;
let gitlab: FakeForge;
let good: string;
let bad: string;

beforeAll(async () => {
  h = await startHarness();
  mock = await seedCi(h);
  dir = tempDir('evalgate-ci-comments-').dir;
  good = experimentFile(dir, '{models: [gen-a]}');
  bad = experimentFile(dir, '{models: [gen-b]}');
  github = await startForge({
    listPath: '/repos/acme/app/issues/12/comments',
    itemPrefix: '/repos/acme/app/issues/comments',
    updateMethod: 'PATCH',
    token: (req) => /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1],
    urlOf: (id) => ({ html_url: `https://github.example/acme/app/pull/12#issuecomment-${id}` }),
  });
  gitlab = await startForge({
    listPath: '/api/v4/projects/77/merge_requests/5/notes',
    itemPrefix: '/api/v4/projects/77/merge_requests/5/notes',
    updateMethod: 'PUT',
    token: (req) => req.headers['private-token'] as string | undefined,
    urlOf: () => ({}),
  });
  // A baseline on main for both candidates.
  const main = await evalgate(h, ['ci', '--file', good, '--branch', 'main']);
  if (main.code !== 0) throw new Error(main.stderr);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
  await github?.close();
  await gitlab?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function githubEnv(token: string): Record<string, string> {
  const event = path.join(dir, 'event.json');
  fs.writeFileSync(event, JSON.stringify({ action: 'synchronize', pull_request: { number: 12 } }));
  return {
    GITHUB_ACTIONS: 'true',
    GITHUB_TOKEN: token,
    GITHUB_REPOSITORY: 'acme/app',
    GITHUB_API_URL: github.url,
    GITHUB_EVENT_PATH: event,
    GITHUB_REF: 'refs/pull/12/merge',
    GITHUB_HEAD_REF: 'feature',
    GITHUB_BASE_REF: 'main',
    GITHUB_SHA: 'f00dcafe',
  };
}

const MARKER = '<!-- evalgate-ci:qa -->';
const ours = (f: FakeForge) => f.notes.filter((n) => n.body.includes(MARKER));
const runIdOf = (stdout: string) => /run (run_\w+) created/.exec(stdout)?.[1];

describe('pull-request comments', { timeout: 120_000 }, () => {
  it('GitHub: the first push creates one comment, the second updates the same one', async () => {
    const first = await evalgate(h, ['ci', '--file', good, '--comment', 'auto'], githubEnv('good'));
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      /Comment created: https:\/\/github\.example\/acme\/app\/pull\/12#issuecomment-100/,
    );
    expect(ours(github)).toHaveLength(1);
    const [comment] = ours(github);
    expect(comment!.body.startsWith(`${MARKER}\n## Evalgate CI: ✅ passed`)).toBe(true);
    expect(comment!.body).toContain(runIdOf(first.stdout)!);
    expect(comment!.body).toContain('pull request #12');
    // Every page of the list was read (3 comments, 2 a page) before creating.
    expect(github.calls.filter((c) => c.startsWith('GET'))).toEqual([
      'GET /repos/acme/app/issues/12/comments?per_page=100',
      'GET /repos/acme/app/issues/12/comments?per_page=100&page=2',
    ]);

    github.calls.length = 0;
    const second = await evalgate(h, ['ci', '--file', bad, '--comment', 'github'], githubEnv('good'));
    expect(second.code, second.stderr).toBe(1);
    expect(second.stdout).toContain('Comment updated');
    expect(ours(github)).toHaveLength(1);
    expect(ours(github)[0]!.id).toBe(comment!.id);
    expect(ours(github)[0]!.body).toContain('## Evalgate CI: ❌ failed');
    expect(ours(github)[0]!.body).toContain(runIdOf(second.stdout)!);
    expect(github.calls.at(-1)).toBe(`PATCH /repos/acme/app/issues/comments/${comment!.id}`);
    expect(github.notes).toHaveLength(4);
  });

  it('GitHub: a 403 leaves the exit code as the gate set it and says why; a 401 too', async () => {
    const before = JSON.stringify(github.notes);
    const refused = await evalgate(h, ['ci', '--file', bad, '--comment', 'github'], githubEnv('readonly'));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'evalgate: the github comment was not posted: updating the comment: 403 Resource not accessible by integration',
    );
    expect(refused.stderr).toContain('pull-requests: write');
    expect(refused.stderr).toContain('(the exit code is unchanged)');
    const passed = await evalgate(h, ['ci', '--file', good, '--comment', 'github'], githubEnv('nope'));
    expect(passed.code).toBe(0);
    expect(passed.stderr).toContain('listing comments: 401 Bad credentials');
    expect(JSON.stringify(github.notes)).toBe(before);
  });

  it('GitLab: one merge-request note, created then updated in place; a refusal keeps the exit code', async () => {
    const env = {
      GITLAB_CI: 'true',
      CI_API_V4_URL: `${gitlab.url}/api/v4`,
      CI_PROJECT_ID: '77',
      CI_PROJECT_URL: 'https://gitlab.example/acme/app',
      CI_MERGE_REQUEST_IID: '5',
      CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: 'feature',
      CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'main',
      CI_COMMIT_SHA: 'beef',
    };
    const first = await evalgate(h, ['ci', '--file', good, '--comment', 'gitlab'], {
      ...env,
      GITLAB_TOKEN: 'good',
    });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(
      'Comment created: https://gitlab.example/acme/app/-/merge_requests/5#note_100',
    );
    const second = await evalgate(h, ['ci', '--file', bad, '--comment', 'auto'], {
      ...env,
      GITLAB_TOKEN: 'good',
    });
    expect(second.code).toBe(1);
    expect(second.stdout).toContain('Comment updated');
    expect(ours(gitlab)).toHaveLength(1);
    expect(ours(gitlab)[0]!.body).toContain(runIdOf(second.stdout)!);
    expect(gitlab.calls.at(-1)).toBe('PUT /api/v4/projects/77/merge_requests/5/notes/100');
    const refused = await evalgate(h, ['ci', '--file', good, '--comment', 'gitlab'], {
      ...env,
      GITLAB_TOKEN: 'readonly',
    });
    expect(refused.code).toBe(0);
    expect(refused.stderr).toContain('updating the comment: 403 Resource not accessible by integration');
    const none = await evalgate(h, ['ci', '--file', good, '--comment', 'gitlab'], env);
    expect(none.code).toBe(0);
    expect(none.stderr).toContain('EVALGATE_GITLAB_TOKEN or GITLAB_TOKEN');
  });
});
