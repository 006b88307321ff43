import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * Runs a composite action's steps the way a GitHub runner does for `shell: bash`: each `run:` script in
 * a file executed with `bash --noprofile --norc -eo pipefail`, after `${{ … }}` expressions are
 * substituted (inputs with their defaults, github.action_path and github.token, earlier steps'
 * outputs), with the step's env, INPUT_* variables and a fresh GITHUB_OUTPUT per step. `uses:` steps
 * (actions/setup-node) are recorded and skipped: the Node.js running the tests stands in for them.
 */

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  shell?: string;
  env?: Record<string, string>;
}

interface Action {
  inputs: Record<string, { default?: string; required?: boolean }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
}

export interface StepResult {
  name: string;
  skipped: boolean;
  code: number;
  stdout: string;
  stderr: string;
}

export interface ActionResult {
  steps: StepResult[];
  outputs: Record<string, string>;
  /** The exit code of the first failing step, 0 when none failed. */
  code: number;
}

function readOutputs(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

/** A script run to its end (asynchronously: the server under test lives in this process). */
function bash(
  script: string,
  options: { cwd?: string; env: NodeJS.ProcessEnv },
): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', script], options);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ status: code ?? 1, stdout, stderr }));
  });
}

export async function runAction(
  actionFile: string,
  inputs: Record<string, string>,
  env: Record<string, string>,
  tmp: string,
): Promise<ActionResult> {
  const action = parse(fs.readFileSync(actionFile, 'utf8')) as Action;
  if (action.runs.using !== 'composite') throw new Error(`not a composite action: ${action.runs.using}`);
  for (const name of Object.keys(inputs)) {
    if (!(name in action.inputs)) throw new Error(`the action has no input ${name}`);
  }
  const stepOutputs: Record<string, Record<string, string>> = {};
  const github = { action_path: path.dirname(actionFile), token: env.GITHUB_TOKEN ?? '' };
  const expr = (text: string): string =>
    text.replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_, name: string) => {
      const [scope, ...rest] = name.split('.');
      if (scope === 'inputs') return value(rest.join('.'));
      if (scope === 'github') return github[rest.join('.') as keyof typeof github] ?? '';
      if (scope === 'steps' && rest[1] === 'outputs') return stepOutputs[rest[0]!]?.[rest[2]!] ?? '';
      throw new Error(`expression not supported: ${name}`);
    });
  const value = (name: string): string => {
    const input = action.inputs[name];
    if (!input) throw new Error(`the action has no input ${name}`);
    if (name in inputs) return inputs[name]!;
    if (input.required) throw new Error(`input ${name} is required`);
    return expr(String(input.default ?? ''));
  };
  const inputEnv = Object.fromEntries(
    Object.keys(action.inputs).map((name) => [`INPUT_${name.toUpperCase()}`, value(name)]),
  );
  const steps: StepResult[] = [];
  let code = 0;
  for (const [i, step] of action.runs.steps.entries()) {
    const name = step.name ?? step.id ?? `step ${i}`;
    if (step.uses !== undefined || code !== 0) {
      steps.push({ name, skipped: true, code: 0, stdout: '', stderr: '' });
      continue;
    }
    if (step.shell !== 'bash') throw new Error(`${name}: shell ${step.shell} not supported`);
    const script = path.join(tmp, `step-${i}.sh`);
    fs.writeFileSync(script, expr(step.run ?? ''));
    const output = path.join(tmp, `output-${i}`);
    fs.writeFileSync(output, '');
    const stepEnv = Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, expr(String(v))]));
    const res = await bash(script, {
      cwd: env.GITHUB_WORKSPACE,
      env: { ...env, ...inputEnv, GITHUB_ACTION_PATH: github.action_path, GITHUB_OUTPUT: output, ...stepEnv },
    });
    steps.push({ name, skipped: false, code: res.status, stdout: res.stdout, stderr: res.stderr });
    if (step.id) stepOutputs[step.id] = readOutputs(output);
    if (res.status !== 0) code = res.status;
  }
  const outputs = Object.fromEntries(Object.entries(action.outputs).map(([k, o]) => [k, expr(o.value)]));
  return { steps, outputs, code };
}
