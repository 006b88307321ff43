/** Something waiting that an abort must reject. */
export interface AbortHandler {
  onAbort(reason: unknown): void;
}

const watched = new WeakMap<AbortSignal, Set<AbortHandler>>();

/**
 * Calls `handler.onAbort` when `signal` aborts, until `unwatchAbort`. One listener per signal however many
 * wait on it: a run's calls share its signal, and thousands of listeners would each cost (and warn).
 */
export function watchAbort(signal: AbortSignal, handler: AbortHandler): void {
  let handlers = watched.get(signal);
  if (handlers === undefined) {
    const set = new Set<AbortHandler>();
    handlers = set;
    watched.set(signal, set);
    const fire = () => {
      for (const h of set) h.onAbort(signal.reason);
      set.clear();
    };
    signal.addEventListener('abort', fire, { once: true });
  }
  handlers.add(handler);
}

export function unwatchAbort(signal: AbortSignal, handler: AbortHandler): void {
  watched.get(signal)?.delete(handler);
}
