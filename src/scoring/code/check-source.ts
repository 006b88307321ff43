import { spawn } from 'node:child_process';
import { ApiError, type ValidationIssue } from '../../shared/errors.js';
import { packagePath } from '../../shared/package-root.js';

const SCRIPT = packagePath('python', 'check_source.py');
const TIMEOUT_MS = 10_000;

export interface Problem {
  loc: (string | number)[];
  msg: string;
  line?: number;
}

/** The checker ended without an answer, and why: it could not start, ran too long, or died. */
class CheckFailed extends Error {
  constructor(
    readonly why: 'unavailable' | 'timeout' | 'killed',
    detail: string,
  ) {
    super(detail);
  }
}

function run(python: string, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // -I: isolated mode, no user site or environment variables steer the interpreter.
    const child = spawn(python, ['-I', SCRIPT], {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: TIMEOUT_MS,
      env: {},
    });
    const started = Date.now();
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    child.on('error', (e) => reject(new CheckFailed('unavailable', e.message)));
    child.on('close', (code, signal) => {
      if (code === 0) return resolve(out);
      if (signal !== null) {
        // Killed at TIMEOUT_MS, or by the system (stack or memory exhausted by the source).
        const timedOut = Date.now() - started >= TIMEOUT_MS;
        return reject(new CheckFailed(timedOut ? 'timeout' : 'killed', `python killed by ${signal}`));
      }
      reject(new CheckFailed('unavailable', `python exited ${code}: ${err.slice(-500)}`));
    });
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

/** What the checker answered: the problems it found, or why it gave no answer. */
export type CheckAnswer =
  | { problems: Problem[] }
  | { failed: 'unavailable' | 'timeout' | 'killed'; detail: string };

export interface CodeToCheck {
  source?: string | null;
  requirements?: readonly string[] | null;
}

/** Runs the checker with the machine's Python (the sandbox runner calls this for its clients). */
export async function checkSource(python: string, input: CodeToCheck): Promise<CheckAnswer> {
  try {
    return { problems: JSON.parse(await run(python, JSON.stringify(input))) as Problem[] };
  } catch (err) {
    return err instanceof CheckFailed
      ? { failed: err.why, detail: err.message }
      : { failed: 'unavailable', detail: (err as Error).message };
  }
}

/**
 * The checker's answer as the API gives it: nothing when the code is fine, else 422 listing every
 * problem, with the line of a syntax error.
 */
export function throwProblems(answer: CheckAnswer): void {
  if ('failed' in answer) {
    // A source the checker cannot get through is the request's problem (422); a checker that cannot run
    // at all is the deployment's (501). The checker itself turns the parser's limits into a problem.
    if (answer.failed === 'timeout' || answer.failed === 'killed') {
      throw ApiError.invalid(
        ['body', 'source'],
        answer.failed === 'timeout'
          ? `Python source could not be checked within ${TIMEOUT_MS / 1000} s; it is too large or complex`
          : 'Python source is too complex to compile; simplify it',
        'python_source',
      );
    }
    throw new ApiError(
      'not_implemented',
      'Code evaluators need a working Python 3 on the server to check their source',
    );
  }
  if (answer.problems.length === 0) return;
  const issues: ValidationIssue[] = answer.problems.map((p) => ({
    loc: ['body', ...p.loc],
    msg: p.msg,
    type: p.loc[0] === 'source' ? 'python_source' : 'requirement',
  }));
  throw ApiError.validation(issues);
}

/** Checks a code evaluator's source and requirements with the machine's Python (see throwProblems). */
export async function checkCodeEvaluator(python: string, input: CodeToCheck): Promise<void> {
  throwProblems(await checkSource(python, input));
}
