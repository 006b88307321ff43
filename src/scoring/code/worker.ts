import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { WorkerLaunch } from './sandbox.js';

/**
 * Evaluator processes run at this nice value: scoring is batch work, so on a machine whose CPU is taken
 * the gateway's answers (and the server's own event loop) go first, and the scoring catches up when the
 * CPU frees (a nice value only changes who runs first under contention, not the CPU time a sample has).
 */
export const SCORER_NICE = 10;

/** coreutils' `nice`, which execs the command (same pid, the whole tree inherits); null when missing. */
const NICE = ['/usr/bin/nice', '/bin/nice'].find((p) => existsSync(p)) ?? null;

/** One result as the runner sends it: a score, a bool, or [score, passed, reason, error, logs]. */
export type WireResult =
  | number
  | boolean
  | [number | null, boolean | null, string | null, [string, string] | null, string | null];

/**
 * How a batch ended. Indices are positions in the batch that was sent. `ok` may carry fewer results
 * than positions (the worker stopped early, near its CPU budget): the rest were not evaluated.
 */
export type BatchResult =
  | { kind: 'ok'; results: WireResult[]; latenciesUs: number[] }
  | { kind: 'timeout'; index: number }
  | { kind: 'crashed'; index: number | null; detail: string }
  | { kind: 'aborted' };

/** A worker that could not be started; `evaluator_load_failed` means the user's source raised. */
export class WorkerStartError extends Error {
  override name = 'WorkerStartError';
  constructor(
    readonly code: 'evaluator_load_failed' | 'evaluator_load_timeout' | 'worker_start_failed',
    message: string,
  ) {
    super(message);
  }
}

export interface WorkerOptions {
  startTimeoutMs: number;
  /** Characters of user output kept per sample. */
  logLimit: number;
}

const STDERR_KEEP = 4096;

/**
 * One long-lived Python runner process. Progress (which sample of which batch is running) is read
 * from a page the runner writes through mmap: a file opened here, unlinked at once and inherited as
 * fd 3, so that a timeout or a crash is attributed to the right sample without a message per sample.
 */
export class WorkerProcess {
  samples = 0;
  cpuSeconds = 0;
  private readonly child: ChildProcess;
  private readonly progressFd: number;
  private readonly progress = Buffer.alloc(8);
  private stdoutBuf = '';
  private stderrTail = '';
  private onLine: ((line: string) => void) | null = null;
  private onExit: ((detail: string) => void) | null = null;
  private exited = false;
  private killed = false;
  private stoppedEarly = false;
  private progressClosed = false;
  private batchId = 0;

  private constructor(launch: WorkerLaunch) {
    const file = path.join(tmpdir(), `evalgate-progress-${randomBytes(8).toString('hex')}`);
    this.progressFd = openSync(file, 'w+', 0o600);
    unlinkSync(file);
    writeSync(this.progressFd, Buffer.alloc(16));
    const [command, args] = NICE
      ? [NICE, ['-n', String(SCORER_NICE), launch.command, ...launch.args]]
      : [launch.command, launch.args];
    this.child = spawn(command, args, {
      env: launch.env,
      cwd: launch.cwd,
      stdio: ['pipe', 'pipe', 'pipe', this.progressFd],
    });
    this.child.stdin!.on('error', () => {});
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.data(chunk));
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_KEEP);
    });
    const exit = (detail: string) => {
      if (this.exited) return;
      this.exited = true;
      this.onExit?.(detail);
      this.progressClosed = true;
      closeSync(this.progressFd);
    };
    this.child.on('error', (err) => exit(`could not start: ${err.message}`));
    this.child.on('exit', (code, signal) =>
      exit(signal ? `killed by ${signal}` : `exited with code ${code}`),
    );
  }

  /** Spawns the runner and waits until it has loaded the evaluator's source. */
  static async start(launch: WorkerLaunch, source: string, options: WorkerOptions): Promise<WorkerProcess> {
    const worker = new WorkerProcess(launch);
    const header = { ...launch.header, source, progress_fd: 3, log_limit: options.logLimit };
    worker.child.stdin!.write(`${JSON.stringify(header)}\n`);
    try {
      const line = await worker.next(options.startTimeoutMs);
      const ready = JSON.parse(line) as { ready: boolean; error?: string };
      if (!ready.ready) throw new WorkerStartError('evaluator_load_failed', ready.error ?? 'unknown error');
      return worker;
    } catch (err) {
      worker.kill();
      throw err;
    }
  }

  get alive(): boolean {
    return !this.exited && !this.killed;
  }

  /** Whether the runner stopped a batch early to stay within its CPU budget. */
  get exhausted(): boolean {
    return this.stoppedEarly;
  }

  get stderr(): string {
    return this.stderrTail;
  }

  private data(chunk: string): void {
    this.stdoutBuf += chunk;
    let nl = this.stdoutBuf.indexOf('\n');
    while (nl >= 0) {
      const line = this.stdoutBuf.slice(0, nl);
      this.stdoutBuf = this.stdoutBuf.slice(nl + 1);
      this.onLine?.(line);
      nl = this.stdoutBuf.indexOf('\n');
    }
  }

  private next(timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        done();
        reject(
          new WorkerStartError('evaluator_load_timeout', `loading the source took over ${timeoutMs} ms`),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.onLine = null;
        this.onExit = null;
      };
      this.onLine = (line) => {
        done();
        resolve(line);
      };
      this.onExit = (detail) => {
        done();
        const tail = this.stderrTail.trim().split('\n').slice(-5).join('\n');
        reject(new WorkerStartError('worker_start_failed', `worker ${detail}${tail ? `: ${tail}` : ''}`));
      };
      if (this.exited) this.onExit('had exited');
    });
  }

  /** The (batch id, 1-based index) the runner last reported; index 0 means none started. */
  private readProgress(): [number, number] {
    if (this.progressClosed) return [0, 0];
    readSync(this.progressFd, this.progress, 0, 8, 0);
    return [this.progress.readUInt32LE(0), this.progress.readUInt32LE(4)];
  }

  /**
   * Sends one batch: `positions` is the JSON array of its `count` [sample, ground_truth, baseline]
   * triples. A sample that runs longer than `timeoutMs` kills the worker; so does `signal`. Never
   * rejects.
   */
  run(positions: string, count: number, timeoutMs: number, signal?: AbortSignal): Promise<BatchResult> {
    const batchId = ++this.batchId;
    return new Promise<BatchResult>((resolve) => {
      let current = 0;
      let seenAt = performance.now();
      const sentAt = seenAt;
      const finish = (result: BatchResult) => {
        clearInterval(watchdog);
        clearTimeout(backstop);
        signal?.removeEventListener('abort', abort);
        this.onLine = null;
        this.onExit = null;
        if (result.kind !== 'ok') this.kill();
        resolve(result);
      };
      const started = (): number | null => {
        const [id, index] = this.readProgress();
        return id === batchId && index > 0 ? index - 1 : null;
      };
      const watchdog = setInterval(
        () => {
          const index = started();
          const now = performance.now();
          if (index === null) {
            // The runner parses the batch before it starts the first sample.
            if (now - sentAt > timeoutMs)
              finish({ kind: 'crashed', index: null, detail: 'worker stopped responding' });
            return;
          }
          if (index !== current) {
            current = index;
            seenAt = now;
          } else if (now - seenAt >= timeoutMs) {
            finish({ kind: 'timeout', index });
          }
        },
        Math.max(5, Math.min(250, timeoutMs / 4)),
      );
      // User code can write the progress page itself; no batch may outlast every sample timing out.
      const backstop = setTimeout(
        () => finish({ kind: 'timeout', index: started() ?? 0 }),
        timeoutMs * (count + 1) + 1000,
      );
      const abort = () => finish({ kind: 'aborted' });
      signal?.addEventListener('abort', abort);
      this.onLine = (line) => {
        let reply: [number, WireResult[], number[], number];
        try {
          reply = JSON.parse(line) as [number, WireResult[], number[], number];
        } catch {
          finish({ kind: 'crashed', index: started(), detail: 'worker wrote an invalid reply' });
          return;
        }
        const done = Array.isArray(reply) && Array.isArray(reply[1]) ? reply[1].length : -1;
        if (reply[0] !== batchId || done < 1 || done > count) {
          finish({ kind: 'crashed', index: started(), detail: 'worker wrote an unexpected reply' });
          return;
        }
        this.samples += done;
        this.cpuSeconds = reply[3];
        if (done < count) this.stoppedEarly = true;
        finish({ kind: 'ok', results: reply[1], latenciesUs: reply[2] });
      };
      this.onExit = (detail) => {
        const tail = this.stderrTail.trim().split('\n').slice(-5).join('\n');
        finish({ kind: 'crashed', index: started(), detail: `worker ${detail}${tail ? `: ${tail}` : ''}` });
      };
      if (signal?.aborted) return abort();
      if (this.exited) return this.onExit('had exited');
      this.child.stdin!.write(`[${batchId},${positions}]\n`);
    });
  }

  /** Kills the worker and its whole sandbox (bubblewrap's --die-with-parent takes the rest down). */
  kill(): void {
    this.killed = true;
    if (!this.exited) this.child.kill('SIGKILL');
  }

  /** Lets an idle worker finish on its own (end of input), killing it if it does not within 2 s. */
  async close(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.kill(), 2000);
    await gone;
    clearTimeout(timer);
  }
}
