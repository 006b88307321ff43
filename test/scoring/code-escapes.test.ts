// Database-independent: the sandbox runs code with no database in reach.
import { existsSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScoreInput, ScoreOutcome } from '../../src/scoring/types.js';
import { type SandboxRunnerProcess, startSandboxRunner } from '../helpers/sandbox-runner.js';
import { tempDir } from '../helpers/temp.js';
import { pairs, scoreWith, skipScoring, testOptions } from './helpers.js';

const PEPPER = 'pepper-that-must-stay-in-the-service-0123456789';

/**
 * Each attack runs in its own evaluator as the middle sample of a batch; the samples around it must
 * still score 1, and the attack must end as a per-sample error.
 */
function attack(body: string): string {
  const indented = body
    .trim()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
  return `import os, sys, socket, time, signal

def attack():
${indented}

def evaluate(sample, ground_truth, baseline):
    if sample["output"] != "attack":
        return 1.0
    result = attack()
    return {"score": 0, "reason": "ESCAPED: " + repr(result)}
`;
}

const around = pairs([
  { output: 'before' },
  { output: 'before' },
  { output: 'attack' },
  { output: 'after' },
  { output: 'after' },
]);

function expectContained(out: ScoreOutcome[], code?: string): ScoreOutcome {
  expect(out).toHaveLength(5);
  const hit = out[2]!;
  expect(hit.reason ?? '').not.toContain('ESCAPED');
  expect(hit.error, JSON.stringify(hit)).not.toBeNull();
  if (code) expect(hit.error!.code).toBe(code);
  for (const i of [0, 1, 3, 4]) expect(out[i]).toMatchObject({ score: 1, error: null });
  return hit;
}

/**
 * Every attack twice: in this process's own sandbox, and through `evalgate sandbox-runner` (a child
 * process holding the secret too), as a server with EVALGATE_SANDBOX_URL runs code evaluators.
 */
describe.skipIf(skipScoring).each(['in this process', 'through the sandbox runner'])(
  'code evaluators: the sandbox contains escapes (%s)',
  (where) => {
    const tmp = tempDir();
    const options = testOptions(tmp.dir, {
      timeoutMs: 1500,
      sandbox: {
        ...testOptions(tmp.dir).sandbox,
        limits: { memoryMb: 1024, cpuSeconds: 60, processes: 16, fileSizeMb: 8, tmpMb: 16 },
      },
    });
    let server: Server;
    let port = 0;
    let connections = 0;
    const secretFile = path.join(tmp.dir, 'evalgate.db');

    let runner: SandboxRunnerProcess | null = null;
    const remote = where === 'through the sandbox runner';
    /** One evaluator over `inputs`, closed afterwards. */
    async function score(source: string, inputs: ScoreInput[]): Promise<ScoreOutcome[]> {
      if (!runner) return scoreWith(options, source, inputs);
      const scorer = await runner.client(options).createScorer({ id: 'evl_test', source, requirements: [] });
      try {
        return await scorer.scoreBatch(inputs, new AbortController().signal);
      } finally {
        await scorer.close();
      }
    }

    beforeAll(async () => {
      process.env.EVALGATE_KEY_PEPPER = PEPPER;
      if (remote) {
        runner = await startSandboxRunner({
          EVALGATE_DATA_DIR: path.join(tmp.dir, 'runner'),
          EVALGATE_KEY_PEPPER: PEPPER,
        });
      }
      writeFileSync(secretFile, 'SQLite format 3 - the service database stand-in');
      server = createServer((socket) => {
        connections++;
        socket.end('hello from the service\n');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(async () => {
      await runner?.stop();
      delete process.env.EVALGATE_KEY_PEPPER;
      await new Promise((resolve) => server.close(resolve));
      tmp.remove();
    });

    it("cannot open a TCP connection to the service's port", async () => {
      const source = attack(`
s = socket.create_connection(("127.0.0.1", ${port}), timeout=1)
return s.recv(100)
`);
      const hit = expectContained(await score(source, around), 'evaluator_exception');
      expect(hit.error!.message).toMatch(/ConnectionRefusedError|Network is unreachable|OSError/);
      expect(connections).toBe(0);
    });

    it('cannot resolve or reach any outside address either', async () => {
      const source = attack(`
s = socket.create_connection(("1.1.1.1", 80), timeout=1)
return "connected"
`);
      expectContained(await score(source, around), 'evaluator_exception');
    });

    it("cannot read the service's database file, /etc/shadow or the data directory", async () => {
      for (const target of [secretFile, '/etc/shadow', tmp.dir, '/proc/1/root/etc/shadow']) {
        const source = attack(`
target = ${JSON.stringify(target)}
if os.path.isdir(target):
    return os.listdir(target)
with open(target) as f:
    return f.read()
`);
        const hit = expectContained(await score(source, around), 'evaluator_exception');
        expect(hit.error!.message).toMatch(/FileNotFoundError|PermissionError/);
      }
    });

    it('cannot write outside /tmp (but can inside)', async () => {
      const hostFile = path.join(tmp.dir, 'written-from-sandbox');
      const source = attack(`
with open("/tmp/scratch.txt", "w") as f:
    f.write("fine")
wrote = []
for target in ["/evil", "/usr/evil", "/opt/evalgate/evil", "/opt/evalgate/runner.py", "/dev/evil", "/proc/evil", ${JSON.stringify(hostFile)}]:
    try:
        with open(target, "w") as f:
            f.write("x")
        wrote.append(target)
    except OSError:
        pass
if wrote:
    return wrote
raise PermissionError("nothing outside /tmp is writable")
`);
      const hit = expectContained(await score(source, around), 'evaluator_exception');
      expect(hit.error!.message).toContain('nothing outside /tmp is writable');
      expect(existsSync(hostFile)).toBe(false);
    });

    it("cannot see the service's environment variables", async () => {
      expect(process.env.EVALGATE_KEY_PEPPER).toBe(PEPPER);
      const source = attack(`
found = [k for k, v in os.environ.items() if "${PEPPER}" in v or k.startswith("EVALGATE")]
for pid in os.listdir("/proc"):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            if b"${PEPPER}" in f.read():
                found.append(pid)
    except (OSError, ValueError):
        pass
if found:
    return found
raise LookupError("visible environment: " + ",".join(sorted(os.environ)))
`);
      const hit = expectContained(await score(source, around), 'evaluator_exception');
      expect(hit.error!.message).toContain(
        'LookupError: visible environment: HOME,LANG,MKL_NUM_THREADS,OMP_NUM_THREADS,OPENBLAS_NUM_THREADS,PATH,PWD,TMPDIR',
      );
      expect(JSON.stringify(hit)).not.toContain(PEPPER);
    });

    it('bounds a fork bomb by the process limit', async () => {
      const source = attack(`
while True:
    os.fork()
`);
      const hit = expectContained(await score(source, around), 'evaluator_exception');
      expect(hit.error!.message).toContain('BlockingIOError');
    });

    it('bounds a fork bomb that ignores errors: processes capped, then the sample times out', async () => {
      const source = attack(`
while True:
    try:
        os.fork()
    except OSError:
        pass
`);
      const started = Date.now();
      expectContained(await score(source, around), 'timeout');
      expect(Date.now() - started).toBeLessThan(15_000);
    });

    it('cannot allocate 4 GB', async () => {
      const source = attack(`
block = bytearray(4 * 1024 ** 3)
return len(block)
`);
      const hit = expectContained(await score(source, around), 'evaluator_exception');
      expect(hit.error!.message).toContain('MemoryError');
    });

    it('stops an infinite loop at the timeout and scores the rest of the batch', async () => {
      const source = attack(`
while True:
    pass
`);
      const started = Date.now();
      const hit = expectContained(await score(source, around), 'timeout');
      expect(hit.error!.message).toContain('1500 ms');
      expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
      expect(Date.now() - started).toBeLessThan(8000);
    });

    it('cannot kill its parent, pid 1 of the sandbox or anything else', async () => {
      const source = attack(`
errors = []
for target in (os.getppid(), 1, -1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError as e:
        errors.append(f"{target}: {e.strerror}")
time.sleep(0.2)
raise ProcessLookupError("still here; " + "; ".join(errors))
`);
      const hit = expectContained(await score(source, around));
      // Either the kill is refused (the evaluator raises) or it takes only the sandbox down.
      expect(['evaluator_exception', 'worker_crashed']).toContain(hit.error!.code);
      expect(process.pid).toBeGreaterThan(0);
    });

    it('survives the worker killing itself and exiting abruptly', async () => {
      for (const body of ['os.kill(os.getpid(), signal.SIGKILL)', 'os._exit(3)']) {
        const hit = expectContained(await score(attack(body), around), 'worker_crashed');
        expect(hit.error!.message).toContain('the worker died while evaluating this sample');
      }
    });
  },
);
