import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ApiError, type ValidationIssue } from '../../shared/errors.js';

const SCRIPT = fileURLToPath(new URL('../../../python/check_source.py', import.meta.url));
const TIMEOUT_MS = 10_000;

interface Problem {
  loc: (string | number)[];
  msg: string;
  line?: number;
}

function run(python: string, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // -I: isolated mode, no user site or environment variables steer the interpreter.
    const child = spawn(python, ['-I', SCRIPT], {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: TIMEOUT_MS,
      env: {},
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`python exited ${code}: ${err.slice(-500)}`)),
    );
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

/**
 * Checks a code evaluator's source (compiles, defines `evaluate`) and requirements (valid specifiers)
 * with the machine's Python; answers 422 listing every problem, with the line of a syntax error.
 */
export async function checkCodeEvaluator(
  python: string,
  input: { source?: string | null; requirements?: readonly string[] | null },
): Promise<void> {
  let problems: Problem[];
  try {
    problems = JSON.parse(await run(python, JSON.stringify(input))) as Problem[];
  } catch {
    throw new ApiError(
      'not_implemented',
      'Code evaluators need a working Python 3 on the server to check their source',
    );
  }
  if (problems.length === 0) return;
  const issues: ValidationIssue[] = problems.map((p) => ({
    loc: ['body', ...p.loc],
    msg: p.msg,
    type: p.loc[0] === 'source' ? 'python_source' : 'requirement',
  }));
  throw ApiError.validation(issues);
}
