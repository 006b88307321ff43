import type * as Undici from 'undici';

/**
 * undici, loaded on the first upstream request instead of at start: evaluating it is a fifth of a
 * start's module loading, and a process that never calls an upstream (a test, a dashboard replica, a
 * process that only answers /healthz before its first call) need not pay it.
 */
let loaded: typeof Undici | null = null;
let loading: Promise<typeof Undici> | null = null;

/** The module once a request has loaded it, else null. */
export function undiciIfLoaded(): typeof Undici | null {
  return loaded;
}

/** Loads undici (once). */
export function loadUndici(): Promise<typeof Undici> {
  loading ??= import('undici').then((module) => {
    // A CommonJS package: where the bundle imports it, its exports are the namespace's default only.
    const exports = (module as unknown as { default?: typeof Undici }).default ?? module;
    loaded = exports;
    return exports;
  });
  return loading;
}

/** The module; only for code that runs after `loadUndici` resolved (an upstream call in flight). */
export function undici(): typeof Undici {
  if (!loaded) throw new Error('undici is used before it was loaded');
  return loaded;
}
