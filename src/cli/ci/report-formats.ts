import type { EvaluatorOutcome, RuleOutcome } from './gates.js';
import type { CiReport, ExperimentReport, ExperimentStatus } from './report.js';

/** The CI report as Markdown (report file, step summary, pull-request comment) and as JUnit XML. */

const STATUS: Record<ExperimentStatus, string> = {
  passed: '✅ passed',
  failed: '❌ failed',
  error: '⚠️ could not run',
};
const RULE: Record<RuleOutcome['status'], string> = { passed: '✅', failed: '❌', skipped: '⏭️' };

const fig = (v: number | null | undefined): string => (v === null || v === undefined ? '-' : v.toFixed(3));
const signed = (v: number | null | undefined): string =>
  v === null || v === undefined ? '-' : `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(3)}`;
/** A table cell: one line, pipes escaped. */
const cell = (s: string): string => s.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
const link = (label: string, url: string | null): string => (url ? `[${label}](${url})` : label);

function deltaText(o: EvaluatorOutcome): string {
  const d = o.delta;
  if (!d) return '-';
  const ci = d.interval
    ? ` [${signed(d.interval.lower)}, ${signed(d.interval.upper)}] (${Math.round(d.interval.level * 100)} %)`
    : '';
  return `${signed(d.mean)}${ci}`;
}

function launchText(o: EvaluatorOutcome): string {
  return `${o.launch}${o.model ? ` ${o.model}` : ''}`;
}

function experimentMarkdown(x: ExperimentReport): string[] {
  const out = [`### Experiment \`${x.name}\`: ${STATUS[x.status]}`, ''];
  if (x.error) out.push(`**Could not run:** ${cell(x.error)}`, '');
  if (x.run_id) {
    const compare = x.compare_url ? ` · ${link('comparison', x.compare_url)}` : '';
    out.push(
      `Run ${link(`\`${x.run_id}\``, x.run_url)} (${x.run_status ?? '-'}); baseline: ${x.baseline_note}${compare}`,
      '',
    );
  }
  if (x.evaluators.length > 0) {
    out.push(
      '| evaluator | launch | candidate | baseline | delta (interval) | verdict | gates |',
      '|---|---|---|---|---|---|---|',
    );
    for (const o of x.evaluators) {
      const gates = o.rules.map((r) => `${RULE[r.status]} ${r.rule}: ${r.text}`).join('<br>') || '-';
      const verdict = o.rules.length === 0 ? (o.delta?.verdict ?? '-') : o.passed ? '✅ pass' : '❌ fail';
      out.push(
        `| ${cell(o.evaluator)} | ${cell(launchText(o))} | ${fig(o.candidate.avg_score)} | ${fig(o.baseline?.avg_score)} | ` +
          `${deltaText(o)} | ${verdict}${o.delta ? ` (${o.delta.verdict})` : ''} | ${cell(gates)} |`,
      );
    }
    out.push('');
  }
  if (x.regressions.length > 0) {
    out.push(
      'Worst regressed items:',
      '',
      '| evaluator | item | baseline | candidate | difference | input |',
      '|---|---|---|---|---|---|',
    );
    for (const r of x.regressions) {
      const item = r.item_id ?? `position ${r.position}`;
      out.push(
        `| ${cell(r.evaluator)} | ${link(cell(item), r.url)} | ${fig(r.baseline_score)} | ${fig(r.run_score)} | ` +
          `${signed(r.difference)} | ${cell(r.input) || '-'} |`,
      );
    }
    out.push('');
  }
  return out;
}

/** The whole report in Markdown. */
export function markdownReport(report: CiReport): string {
  const where = [
    report.commit ? `commit \`${report.commit.slice(0, 12)}\`` : null,
    report.branch ? `branch \`${report.branch}\`` : null,
    report.pull_request !== null ? `pull request #${report.pull_request}` : null,
  ].filter((s): s is string => s !== null);
  const out = [`## Evalgate CI: ${STATUS[report.status]}`, ''];
  if (where.length > 0 || report.job_url) {
    out.push(`${where.join(', ')}${report.job_url ? ` · ${link('job', report.job_url)}` : ''}`, '');
  }
  for (const x of report.experiments) out.push(...experimentMarkdown(x));
  return `${out.join('\n').trimEnd()}\n`;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};
/** Characters XML 1.0 cannot carry (controls other than tab, newline and carriage return). */
function xmlAllowed(ch: string): boolean {
  const code = ch.codePointAt(0) ?? 0;
  return code === 0x9 || code === 0xa || code === 0xd || (code >= 0x20 && code !== 0xfffe && code !== 0xffff);
}

/** XML text or attribute: escaped, and without the characters XML 1.0 cannot carry. */
function xml(s: string): string {
  return Array.from(s)
    .filter(xmlAllowed)
    .join('')
    .replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}
const seconds = (ms: number): string => (ms / 1000).toFixed(3);

interface Case {
  name: string;
  failure?: { type: string; message: string };
  error?: string;
  skipped?: string;
}

function casesOf(x: ExperimentReport): Case[] {
  if (x.status === 'error' && x.evaluators.length === 0)
    return [{ name: 'run', error: x.error ?? 'could not run' }];
  const cases: Case[] = [];
  for (const o of x.evaluators) {
    const base = `${o.evaluator} [launch ${launchText(o)}]`;
    if (o.rules.length === 0) cases.push({ name: `${base}: results` });
    for (const r of o.rules) {
      const name = `${base}: ${r.rule}`;
      if (r.status === 'failed') cases.push({ name, failure: { type: r.rule, message: r.text } });
      else if (r.status === 'skipped') cases.push({ name, skipped: r.text });
      else cases.push({ name });
    }
  }
  if (x.status === 'error') cases.push({ name: 'run', error: x.error ?? 'could not run' });
  return cases;
}

function caseXml(suite: string, c: Case): string {
  const open = `    <testcase classname="evalgate.${xml(suite)}" name="${xml(c.name)}" time="0"`;
  if (c.failure)
    return `${open}>\n      <failure message="${xml(c.failure.message)}" type="${xml(c.failure.type)}">${xml(c.failure.message)}</failure>\n    </testcase>`;
  if (c.error)
    return `${open}>\n      <error message="${xml(c.error)}" type="error">${xml(c.error)}</error>\n    </testcase>`;
  if (c.skipped) return `${open}>\n      <skipped message="${xml(c.skipped)}"/>\n    </testcase>`;
  return `${open}/>`;
}

/** JUnit XML as CI systems read it: testsuites > testsuite (one per experiment) > testcase (one per rule). */
export function junitReport(report: CiReport): string {
  const suites: string[] = [];
  let tests = 0;
  let failures = 0;
  let errors = 0;
  let time = 0;
  for (const x of report.experiments) {
    const cases = casesOf(x);
    const f = cases.filter((c) => c.failure).length;
    const e = cases.filter((c) => c.error).length;
    const s = cases.filter((c) => c.skipped).length;
    tests += cases.length;
    failures += f;
    errors += e;
    time += x.duration_ms;
    const props = [
      ['run_id', x.run_id],
      ['run_url', x.run_url],
      ['baseline_id', x.baseline_id],
      ['commit', report.commit],
      ['branch', report.branch],
    ].filter((p): p is [string, string] => typeof p[1] === 'string');
    const properties = props.length
      ? `    <properties>\n${props.map(([n, v]) => `      <property name="${n}" value="${xml(v)}"/>`).join('\n')}\n    </properties>\n`
      : '';
    suites.push(
      `  <testsuite name="${xml(x.name)}" tests="${cases.length}" failures="${f}" errors="${e}" skipped="${s}" ` +
        `time="${seconds(x.duration_ms)}" timestamp="${report.created_at.replace(/\.\d+Z$/, '')}">\n` +
        properties +
        cases.map((c) => caseXml(x.name, c)).join('\n') +
        '\n  </testsuite>',
    );
  }
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<testsuites name="evalgate ci" tests="${tests}" failures="${failures}" errors="${errors}" time="${seconds(time)}">\n` +
    `${suites.join('\n')}\n</testsuites>\n`
  );
}
