import fs from 'node:fs';

/**
 * Where a CI job runs: the commit, the branch, the pull (merge) request and its target branch, read from
 * GitHub Actions' or GitLab CI's variables (flags override them). Recorded in each run's metadata, so
 * that the next job finds its baseline.
 */

export interface CiContext {
  provider: 'github' | 'gitlab' | null;
  commit: string | null;
  branch: string | null;
  pullRequest: number | null;
  /** The branch a pull request merges into (the default baseline). */
  targetBranch: string | null;
  /** A link to the CI job, for the report. */
  jobUrl: string | null;
}

type Env = Record<string, string | undefined>;

const text = (v: string | undefined): string | null => (v === undefined || v.trim() === '' ? null : v.trim());

function positive(v: unknown): number | null {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : null;
}

/** A GitHub pull request's number: from the event payload, else from `refs/pull/N/merge`. */
export function githubPullRequest(env: Env): number | null {
  const eventPath = text(env.GITHUB_EVENT_PATH);
  if (eventPath) {
    try {
      const event = JSON.parse(fs.readFileSync(eventPath, 'utf8')) as {
        pull_request?: { number?: unknown };
        number?: unknown;
      };
      const n = positive(event.pull_request?.number) ?? (event.pull_request ? positive(event.number) : null);
      if (n !== null) return n;
    } catch {
      // An unreadable payload: the ref may still say.
    }
  }
  const m = /^refs\/pull\/(\d+)\//.exec(env.GITHUB_REF ?? '');
  return m ? positive(m[1]) : null;
}

function github(env: Env): CiContext {
  const pullRequest = githubPullRequest(env);
  const server = text(env.GITHUB_SERVER_URL) ?? 'https://github.com';
  const repo = text(env.GITHUB_REPOSITORY);
  const runId = text(env.GITHUB_RUN_ID);
  return {
    provider: 'github',
    commit: text(env.GITHUB_SHA),
    // In a pull request GITHUB_REF_NAME is "N/merge": the head branch is GITHUB_HEAD_REF.
    branch: text(env.GITHUB_HEAD_REF) ?? text(env.GITHUB_REF_NAME),
    pullRequest,
    targetBranch: text(env.GITHUB_BASE_REF),
    jobUrl: repo && runId ? `${server}/${repo}/actions/runs/${runId}` : null,
  };
}

function gitlab(env: Env): CiContext {
  return {
    provider: 'gitlab',
    commit: text(env.CI_COMMIT_SHA),
    branch:
      text(env.CI_MERGE_REQUEST_SOURCE_BRANCH_NAME) ??
      text(env.CI_COMMIT_BRANCH) ??
      text(env.CI_COMMIT_REF_NAME),
    pullRequest: positive(env.CI_MERGE_REQUEST_IID),
    targetBranch: text(env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME),
    jobUrl: text(env.CI_JOB_URL),
  };
}

export interface CiOverrides {
  commit?: string;
  branch?: string;
  pullRequest?: number;
  targetBranch?: string;
}

export function ciContext(env: Env, overrides: CiOverrides = {}): CiContext {
  const base: CiContext =
    env.GITHUB_ACTIONS === 'true'
      ? github(env)
      : env.GITLAB_CI === 'true'
        ? gitlab(env)
        : { provider: null, commit: null, branch: null, pullRequest: null, targetBranch: null, jobUrl: null };
  return {
    ...base,
    commit: overrides.commit ?? base.commit,
    branch: overrides.branch ?? base.branch,
    pullRequest: overrides.pullRequest ?? base.pullRequest,
    targetBranch: overrides.targetBranch ?? base.targetBranch,
  };
}
