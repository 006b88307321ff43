import { EventEmitter } from 'node:events';

/**
 * A one-shot cancellation that undici accepts in place of an AbortSignal. The gateway makes one per
 * request: an AbortController plus its EventTarget listeners cost several times more on the hot path.
 */
export class CallCanceller extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

/** What can cancel a provider-layer call. */
export type CancelSignal = AbortSignal | CallCanceller;

/**
 * The listeners of each AbortSignal that onCancel watches, behind one listener of the signal's own. A
 * run's chunk has one signal for all its calls: on the signal itself every add and remove walks the
 * list of the others, so a chunk of n calls would cost n² steps.
 */
const fanOut = new WeakMap<AbortSignal, Set<() => void>>();

function watch(signal: AbortSignal): Set<() => void> {
  const listeners = new Set<() => void>();
  fanOut.set(signal, listeners);
  signal.addEventListener(
    'abort',
    () => {
      fanOut.delete(signal);
      for (const listener of listeners) {
        try {
          listener();
        } catch (err) {
          // As an EventTarget would: reported, and the other listeners still run.
          queueMicrotask(() => {
            throw err;
          });
        }
      }
    },
    { once: true },
  );
  return listeners;
}

/** Runs `listener` once when the signal fires; returns the function that removes it. */
export function onCancel(signal: CancelSignal, listener: () => void): () => void {
  if (signal instanceof CallCanceller) {
    signal.once('abort', listener);
    return () => signal.off('abort', listener);
  }
  // An aborted signal fires no more (as with addEventListener): nothing to watch.
  if (signal.aborted) return () => {};
  const listeners = fanOut.get(signal) ?? watch(signal);
  listeners.add(listener);
  return () => listeners.delete(listener);
}
