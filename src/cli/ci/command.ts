import type { Command } from 'commander';
import { collect, wholeNumber } from '../client-context.js';
import type { CiFlags } from './run.js';

/**
 * `evalgate ci` (docs/ci.md): runs the experiments of an experiment file against a server, compares each
 * with its baseline, applies the gates and reports. Exit codes: 0 every gate passed, 1 a gate failed, 2
 * an experiment could not run.
 */
export function registerCiCommand(program: Command): void {
  program
    .command('ci')
    .description(
      'run the experiments of an experiment file, compare with their baselines and apply the gates',
    )
    .option('-f, --file <file>', 'the experiment file', 'evalgate.yaml')
    .option('--experiment <name>', 'run this experiment only (repeatable; default: all)', collect, [])
    .option('--report <file>', 'write the Markdown report to FILE (default: stdout)')
    .option('--junit <file>', 'write JUnit XML to FILE')
    .option('--json <file>', 'write the report as JSON to FILE')
    .option('--comment [provider]', 'comment on the pull request: github, gitlab or auto (the CI it runs in)')
    .option(
      '--dashboard-url <url>',
      "the dashboard's address for links (EVALGATE_DASHBOARD_URL; default: the server)",
    )
    .option(
      '--project <id>',
      "the key's project id for links (EVALGATE_PROJECT; default: asked of the server)",
    )
    .option('--commit <sha>', 'the commit recorded with the runs (default: from the CI variables)')
    .option('--branch <name>', 'the branch recorded with the runs (default: from the CI variables)')
    .option(
      '--pull-request <n>',
      'the pull request number (default: from the CI variables)',
      wholeNumber('--pull-request'),
    )
    .option('--target-branch <name>', 'the default baseline branch (default: the pull request’s target)')
    .action(async (flags: CiFlags, cmd: Command) => {
      const { ci } = await import('./run.js');
      await ci(flags, cmd);
    });
}
