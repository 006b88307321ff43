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

/** Runs `listener` once when the signal fires; returns the function that removes it. */
export function onCancel(signal: CancelSignal, listener: () => void): () => void {
  if (signal instanceof CallCanceller) {
    signal.once('abort', listener);
    return () => signal.off('abort', listener);
  }
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}
