import fs from 'node:fs';
import type { Command } from 'commander';
import type { CreateGuardPolicy, GuardPolicy } from '../client/index.js';
import { clientFrom, usage, wholeNumber } from './client-context.js';
import { countLine, detail, firstItems, print, printJson, table } from './output.js';

/** `evalgate guards list|get|create|delete|verdicts`: the gateway's guard policies and their verdicts. */

function show(p: GuardPolicy): string {
  const head = detail([
    ['policy', `${p.name} (${p.id})`],
    ['enabled', p.enabled ? 'yes' : 'no'],
    ['containers', p.applies_to.containers.join(', ') || '-'],
    ['keys', p.applies_to.keys.join(', ') || '-'],
    ['models', p.applies_to.models.join(', ') || '-'],
    ['description', p.description ?? '-'],
    ['updated', p.updated_at],
  ]);
  const checks = table(
    ['check', 'guard', 'stage', 'action', 'timeout ms', 'on error', 'streaming'],
    p.checks.map((c) => [
      c.name,
      c.guard.type === 'evaluator' ? `evaluator ${c.guard.evaluator}` : c.guard.type,
      c.stage,
      c.action,
      c.timeout_ms,
      c.on_error,
      c.streaming,
    ]),
  );
  return `${head}\n${checks}`;
}

function policyFile(file: string): CreateGuardPolicy {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw usage(`--file ${file}: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw usage(`--file ${file} must hold a JSON object (name, applies_to, checks)`);
  }
  return parsed as CreateGuardPolicy;
}

export function registerGuardCommands(program: Command): void {
  const guards = program.command('guards').description("the gateway's guard policies and their verdicts");

  guards
    .command('list')
    .description('list guard policies in the order the gateway applies them')
    .option('--limit <n>', 'how many policies', wholeNumber('--limit'), 20)
    .option('--json', 'print the policies as a JSON array')
    .action(async (opts: { limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems((limit) => client.guards.list({ limit }), opts.limit);
      if (opts.json) return printJson(items);
      print(
        table(
          ['name', 'id', 'enabled', 'checks', 'updated'],
          items.map((p) => [
            p.name,
            p.id,
            p.enabled ? 'yes' : 'no',
            p.checks.map((c) => c.name).join(', '),
            p.updated_at,
          ]),
        ),
      );
      print(countLine(items.length, total, 'guard policies'));
    });

  guards
    .command('get <policy>')
    .description('show a guard policy (id or name) and its checks')
    .option('--json', 'print the policy as JSON')
    .action(async (policy: string, opts: { json?: boolean }, cmd: Command) => {
      const p = await clientFrom(cmd).guards.get(policy);
      if (opts.json) return printJson(p);
      print(show(p));
    });

  guards
    .command('create')
    .description('create a guard policy from a JSON file (name, applies_to, checks; see docs/guards.md)')
    .requiredOption('--file <json>', 'the policy as JSON')
    .option('--name <name>', "the policy's name (over the file's)")
    .option('--json', 'print the created policy as JSON')
    .action(async (opts: { file: string; name?: string; json?: boolean }, cmd: Command) => {
      const body = policyFile(opts.file);
      if (opts.name !== undefined) body.name = opts.name;
      const p = await clientFrom(cmd).guards.create(body);
      if (opts.json) return printJson(p);
      print(show(p));
    });

  guards
    .command('delete <policy>')
    .description('delete a guard policy (its verdicts stay)')
    .action(async (policy: string, _opts: unknown, cmd: Command) => {
      const res = await clientFrom(cmd).guards.delete(policy);
      print(`deleted ${res.id}`);
    });

  guards
    .command('verdicts')
    .description('verdicts of the guards, newest first')
    .option('--guard <name>', "only this check's")
    .option('--verdict <kind>', 'passed, blocked, flagged, redacted or error')
    .option('--log <id>', "only this task log's")
    .option('--limit <n>', 'how many verdicts', wholeNumber('--limit'), 20)
    .option('--json', 'print the verdicts as a JSON array')
    .action(
      async (
        opts: { guard?: string; verdict?: string; log?: string; limit: number; json?: boolean },
        cmd: Command,
      ) => {
        const verdicts = ['passed', 'blocked', 'flagged', 'redacted', 'error'] as const;
        const verdict = verdicts.find((v) => v === opts.verdict);
        if (opts.verdict !== undefined && verdict === undefined)
          throw usage(`--verdict must be one of ${verdicts.join(', ')}`);
        const client = clientFrom(cmd);
        const { items, total } = await firstItems(
          (limit) =>
            client.guards.verdicts({
              ...(opts.guard ? { guard: opts.guard } : {}),
              ...(verdict ? { verdict } : {}),
              ...(opts.log ? { task_log_id: opts.log } : {}),
              limit,
            }),
          opts.limit,
        );
        if (opts.json) return printJson(items);
        print(
          table(
            ['guard', 'stage', 'verdict', 'score', 'task log', 'reason', 'at'],
            items.map((v) => [
              v.guard,
              v.stage,
              v.verdict,
              v.score ?? '-',
              v.task_log_id ?? '-',
              v.reason ?? '',
              v.created_at,
            ]),
          ),
        );
        print(countLine(items.length, total, 'verdicts'));
      },
    );
}
