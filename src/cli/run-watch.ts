import cliProgress from 'cli-progress';
import { type Evalgate, isRecoverable, isTerminal, type Run, type RunEvent } from '../client/index.js';
import { usd } from './output.js';
import { progressOf } from './run-results.js';

/**
 * Follows a run until it ends: a live progress bar (samples done / total, rate, ETA, spend) on a
 * terminal, plain lines otherwise (one per change, at most one a second). People get it on stdout; with
 * `--json` the bar goes to stderr when that is a terminal, and nothing is drawn otherwise.
 */

interface Display {
  update(state: State): void;
  stop(): void;
}

interface State {
  status: string;
  done: number;
  total: number | null;
  spend: number | null;
  note: string;
}

const SPEND_EVERY_MS = 2000;
const LINE_EVERY_MS = 1000;
const MAX_RECONNECTS = 10;

function rateOf(started: number, firstDone: number | null, done: number): number {
  const elapsed = (Date.now() - started) / 1000;
  return firstDone === null || elapsed <= 0 ? 0 : (done - firstDone) / elapsed;
}

function etaText(rate: number, done: number, total: number | null): string {
  if (total === null || rate <= 0) return '-';
  const s = Math.round((total - done) / rate);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

function barDisplay(runId: string, stream: NodeJS.WriteStream): Display {
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `${runId} [{bar}] {value}/{total} {percentage}% | {rate}/s | ETA {eta_text} | {spend} | {state}`,
      barCompleteChar: '█',
      barIncompleteChar: '░',
      barsize: 30,
      hideCursor: false,
      fps: 10,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let firstDone: number | null = null;
  let running = false;
  let announced = '';
  return {
    update(s) {
      const state = s.note ? `${s.status} (${s.note})` : s.status;
      if (s.total === null) {
        // Not planned yet (queued): a line per change until there is a total to draw a bar against.
        if (!running && state !== announced) stream.write(`${runId} ${state}\n`);
        announced = state;
        return;
      }
      if (s.status === 'running' && firstDone === null) firstDone = s.done;
      const rate = rateOf(started, firstDone, s.done);
      const payload = {
        rate: rate.toFixed(1),
        eta_text: etaText(rate, s.done, s.total),
        spend: usd(s.spend),
        state,
      };
      if (!running) {
        bar.start(s.total, s.done, payload);
        running = true;
      } else {
        if (s.total !== bar.getTotal()) bar.setTotal(s.total);
        bar.update(s.done, payload);
      }
    },
    stop() {
      if (running) bar.stop();
      running = false;
    },
  };
}

function lineDisplay(runId: string, stream: NodeJS.WriteStream): Display {
  const started = Date.now();
  let firstDone: number | null = null;
  let lastKey = '';
  let lastAt = 0;
  let lastStatus = '';
  let pending: State | null = null;
  let timer: NodeJS.Timeout | null = null;
  const write = (s: State) => {
    const rate = rateOf(started, firstDone, s.done);
    const pct = s.total ? ` (${((100 * s.done) / s.total).toFixed(1)}%)` : '';
    stream.write(
      `${new Date().toISOString()} ${runId} ${s.status} ${s.done}/${s.total ?? '?'}${pct} ` +
        `${rate.toFixed(1)}/s ETA ${etaText(rate, s.done, s.total)} spend ${usd(s.spend)}` +
        `${s.note ? ` ${s.note}` : ''}\n`,
    );
    lastKey = keyOf(s);
    lastAt = Date.now();
    lastStatus = s.status;
    pending = null;
  };
  // A line when something changed (not the rate alone): status changes at once, the rest at most once
  // a second, keeping the latest to write when the second is up or the run ends.
  const keyOf = (s: State) => `${s.status} ${s.done} ${s.total} ${usd(s.spend)} ${s.note}`;
  return {
    update(s) {
      if (s.status === 'running' && firstDone === null && s.total !== null) firstDone = s.done;
      if (keyOf(s) === lastKey) {
        pending = null;
        return;
      }
      const wait = LINE_EVERY_MS - (Date.now() - lastAt);
      if (s.status !== lastStatus || wait <= 0) write(s);
      else {
        pending = { ...s };
        timer ??= setTimeout(() => {
          timer = null;
          if (pending) write(pending);
        }, wait);
      }
    },
    stop() {
      if (timer) clearTimeout(timer);
      timer = null;
      if (pending) write(pending);
    },
  };
}

export async function watchRun(client: Evalgate, runId: string, options: { json: boolean }): Promise<Run> {
  const stream = options.json ? process.stderr : process.stdout;
  // With --json and no terminal (CI), nothing but the run on stdout and errors on stderr.
  const display: Display = stream.isTTY
    ? barDisplay(runId, stream)
    : options.json
      ? { update: () => undefined, stop: () => undefined }
      : lineDisplay(runId, stream);
  // The status is unknown until the first status event (a progress event comes before it).
  const state: State = { status: '', done: 0, total: null, spend: null, note: '' };
  let spendAt = 0;
  let spendLoading = false;
  let ended = false;
  // Spend is not in the events: it is read from the run now and then, without holding the stream up.
  const refreshSpend = () => {
    if (spendLoading || Date.now() - spendAt < SPEND_EVERY_MS) return;
    spendLoading = true;
    spendAt = Date.now();
    client.runs
      .get(runId)
      .then((run) => {
        state.spend = run.spend;
        if (!ended && state.status !== '' && !isTerminal(state.status)) display.update(state);
      })
      .catch(() => undefined)
      .finally(() => {
        spendLoading = false;
      });
  };
  const onEvent = (event: RunEvent) => {
    if (event.event === 'progress') {
      state.done = event.data.done;
      state.total = event.data.total;
    } else if (event.event === 'status') {
      state.status = event.data.status;
      if (state.status !== 'queued') state.note = '';
    } else if (event.event === 'queue') {
      state.note = event.data.waiting_for_worker
        ? `waiting for a worker of environment ${event.data.environment}`
        : `${event.data.live_workers} worker(s) in environment ${event.data.environment}`;
    }
    // Not yet drawn: the status is unknown, or the run has ended (drawn once its final figures are read).
    if (state.status === '' || isTerminal(state.status)) return;
    display.update(state);
    refreshSpend();
  };
  const interrupted = () => {
    display.stop();
    process.stderr.write(
      `\nevalgate: stopped watching; run ${runId} goes on (evalgate runs cancel ${runId} stops it)\n`,
    );
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  try {
    let failures = 0;
    while (true) {
      try {
        for await (const event of client.runs.stream(runId)) {
          failures = 0;
          onEvent(event);
          if (event.event === 'status' && isTerminal(event.data.status)) break;
        }
      } catch (err) {
        if (!isRecoverable(err) || ++failures > MAX_RECONNECTS) throw err;
      }
      const run = await client.runs.get(runId);
      if (isTerminal(run.status)) {
        state.status = run.status;
        state.spend = run.spend;
        const progress = progressOf(run);
        if (progress) Object.assign(state, progress);
        display.update(state);
        return run;
      }
      // The stream ended early (a restarted server, a proxy's idle timeout): follow it again.
      await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** failures, 8000)));
    }
  } finally {
    ended = true;
    display.stop();
    process.removeListener('SIGINT', interrupted);
  }
}
