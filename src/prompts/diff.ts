import { createTwoFilesPatch } from 'diff';
import type { PromptDiff, PromptVersion } from './schemas.js';

type Change = { old: unknown; new: unknown };

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
const change = (a: unknown, b: unknown): Change | null =>
  same(a, b) ? null : { old: a ?? null, new: b ?? null };

/** Keys whose values differ between two objects, each with both values (absent as null). */
function keyChanges(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, Change> {
  const out: Record<string, Change> = {};
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const c = change(a[key], b[key]);
    if (c) out[key] = c;
  }
  return out;
}

/** A message's content as a unified diff (text lines), without file headers. */
function patchOf(index: number, from: string, to: string): string {
  const name = `messages[${index}].content`;
  const patch = createTwoFilesPatch(name, name, `${from}\n`, `${to}\n`, undefined, undefined, { context: 3 });
  // The two header lines ('===…' and '--- / +++') name the same message; the hunks are what differs.
  return patch
    .split('\n')
    .filter((line) => !line.startsWith('===='))
    .join('\n')
    .trimEnd();
}

/** Two versions compared field by field: messages (by position, content as a unified diff), model, parameters, variables, tools, response format. */
export function diffVersions(a: PromptVersion, b: PromptVersion): PromptDiff {
  const messages: PromptDiff['messages'] = [];
  const n = Math.max(a.messages.length, b.messages.length);
  for (let i = 0; i < n; i++) {
    const x = a.messages[i];
    const y = b.messages[i];
    if (!x && y) messages.push({ index: i, status: 'added', patch: patchOf(i, '', y.content) });
    else if (x && !y) messages.push({ index: i, status: 'removed', patch: patchOf(i, x.content, '') });
    else if (x && y) {
      const role = change(x.role, y.role);
      if (!role && x.content === y.content && same(x.name, y.name)) {
        messages.push({ index: i, status: 'unchanged' });
      } else {
        messages.push({
          index: i,
          status: 'changed',
          ...(role ? { role } : {}),
          ...(x.content !== y.content ? { patch: patchOf(i, x.content, y.content) } : {}),
        });
      }
    }
  }
  const diff: PromptDiff = {
    object: 'prompt.diff',
    prompt_id: a.prompt_id,
    from_version: a.version,
    to_version: b.version,
    changed: false,
    messages,
    model: change(a.model, b.model),
    parameters: keyChanges(a.parameters as Record<string, unknown>, b.parameters as Record<string, unknown>),
    variables: keyChanges(a.variables, b.variables),
    tools: change(a.tools, b.tools),
    response_format: change(a.response_format, b.response_format),
  };
  diff.changed =
    messages.some((m) => m.status !== 'unchanged') ||
    diff.model !== null ||
    Object.keys(diff.parameters).length > 0 ||
    Object.keys(diff.variables).length > 0 ||
    diff.tools !== null ||
    diff.response_format !== null;
  return diff;
}
