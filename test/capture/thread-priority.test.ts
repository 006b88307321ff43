// Database-independent: the writer thread's scheduling priority, no store.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { canChangeClasses } from '../helpers/chrt.js';

/*
 * The helper shell that runs `chrt` (ChrtShell): a process that changes a thread's class gets its
 * answers, and then ends on its own (the shell's pipes hold its event loop only while an answer is
 * awaited), leaving no shell behind. A real process under tsx, real chrt.
 */

const SCRIPT = `
import fs from 'node:fs';
import { setIdleClass } from './src/capture/thread-priority.ts';
import { policyOf } from './test/helpers/chrt.ts';
const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
const idle = await setIdleClass(tid, true);
const policy = policyOf(tid);
const back = await setIdleClass(tid, false);
console.log(JSON.stringify({ idle, policy, back }));
`;

describe('the chrt helper shell', () => {
  it.skipIf(!canChangeClasses())(
    'answers each change, and lets the process end on its own with the shell gone',
    { timeout: 30_000 },
    () => {
      // Exits 0 only if the event loop ended with every await settled (13 would mean an answer never came).
      const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], {
        cwd: process.cwd(),
        encoding: 'utf8',
        timeout: 20_000,
      });
      // SCHED_IDLE is policy 5 in /proc's stat (field 41).
      expect(JSON.parse(out.trim())).toEqual({ idle: true, policy: 5, back: true });
    },
  );
});
