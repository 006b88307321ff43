import { useEffect } from 'react';
import type { Monitor } from '../types';

/** Calls `fn` every `ms` while the page is shown. */
export function useEvery(ms: number, fn: () => void): void {
  useEffect(() => {
    const t = setInterval(fn, ms);
    return () => clearInterval(t);
  }, [ms, fn]);
}

export function filterText(m: Monitor): string {
  const parts: string[] = [];
  if (m.filter.models) parts.push(`models: ${m.filter.models.join(', ')}`);
  if (m.filter.routes) parts.push(`routes: ${m.filter.routes.join(', ')}`);
  for (const [k, v] of Object.entries(m.filter.metadata ?? {})) parts.push(`${k} = ${String(v)}`);
  return parts.length ? parts.join('; ') : 'every call';
}

const METRIC = { pass_rate: 'pass rate', avg_score: 'average score' } as const;

/** The alert rule in words: `pass rate of helpful below 0.8 over 1 h (≥ 10 samples)`. */
export function alertText(m: Monitor, name: (evaluatorId: string) => string): string {
  const a = m.alert;
  if (!a) return 'none';
  const window = a.window % 3600 === 0 ? `${a.window / 3600} h` : `${Math.round(a.window / 60)} min`;
  return `${METRIC[a.metric]} of ${name(a.evaluator)} below ${a.below} over ${window} (≥ ${a.min_samples ?? 10} samples)`;
}

/** The alert's state: firing, resolved, or not decided yet (too few samples so far). */
export function AlertBadge(props: { monitor: Monitor }) {
  const m = props.monitor;
  if (!m.alert) return null;
  const state = m.alert_state;
  return (
    <span
      className={`badge ${state === 'firing' ? 'fail' : state === 'resolved' ? 'pass' : ''}`}
      data-testid="alert-state"
      title={state ? `alert ${state}` : 'alert: not decided yet (too few scored calls in the window)'}
    >
      {state === 'firing' ? 'alert firing' : state === 'resolved' ? 'alert resolved' : 'alert pending'}
    </span>
  );
}

/** The container as people named it (its label), its id only when the label is unknown. */
export function containerName(m: Monitor & { container_label?: string | null }): string {
  return m.container_label ?? m.container;
}
