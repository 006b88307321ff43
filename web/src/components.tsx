import { type ReactNode, useEffect, useRef, useState } from 'react';
import { Link } from './router';
import type { Container } from './types';

export function fmtDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function fmtUsd(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (value === 0) return '$0';
  // Plain decimals at every size, small amounts to 1e-10 USD (never 9.00e-7).
  return Math.abs(value) >= 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(10).replace(/0+$/, '')}`;
}

export function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function fmtNum(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}

export function fmtPct(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return `${(value * 100).toFixed(1)}%`;
}

/** A launch's name: its generating model, or the sample's own outputs when nothing was generated. */
export function launchName(
  model: string | null | undefined,
  index: number,
  launches: number,
  prompt?: { name: string; version: number } | null,
): string {
  // An experiment's launch is a prompt version × a model: both named.
  const version = prompt ? ` · ${prompt.name}@${prompt.version}` : '';
  if (model) return `${model}${version}`;
  return launches > 1 ? `launch ${index}${version}` : `sample outputs${version}`;
}

/** Text of any JSON value: strings as they are, the rest pretty-printed. */
export function asText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value, null, 2);
}

export function Value(props: { value: unknown; empty?: string }) {
  const text = asText(props.value);
  if (!text) return <span className="muted">{props.empty ?? '—'}</span>;
  return <pre className="value">{text}</pre>;
}

export function ErrorBox(props: { error: Error | string | undefined | null }) {
  if (!props.error) return null;
  const message = typeof props.error === 'string' ? props.error : props.error.message;
  return (
    <div className="error" role="alert">
      {message}
    </div>
  );
}

export function Loading() {
  return <div className="muted loading">Loading…</div>;
}

export function StatusBadge(props: { status: string }) {
  return <span className={`badge status-${props.status}`}>{props.status}</span>;
}

export function ProgressBar(props: { done: number; total: number | null; label?: boolean }) {
  const fraction = props.total ? Math.min(1, props.done / props.total) : 0;
  return (
    <div className="progress-wrap">
      <progress value={props.total ? fraction : undefined} max={1} aria-label="progress" />
      {props.label !== false && (
        <span className="progress-text">
          {props.done}
          {props.total !== null ? ` / ${props.total}` : ''}
        </span>
      )}
    </div>
  );
}

/** A modal dialog (the native <dialog>), open while mounted. */
export function Dialog(props: { title: string; onClose: () => void; children: ReactNode; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className={props.wide ? 'wide' : undefined}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
      aria-label={props.title}
    >
      <header className="dialog-head">
        <h2>{props.title}</h2>
        <button type="button" className="ghost" onClick={props.onClose} aria-label="Close">
          ✕
        </button>
      </header>
      {props.children}
    </dialog>
  );
}

export function CopyButton(props: { text: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        await navigator.clipboard.writeText(props.text);
        setCopied(true);
      }}
    >
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}

export function Tabs(props: {
  tabs: { id: string; label: string }[];
  current: string;
  onChange: (id: string) => void;
}) {
  return (
    <div className="tabs" role="tablist">
      {props.tabs.map((t) => (
        <button
          key={t.id}
          type="button"
          role="tab"
          aria-selected={t.id === props.current}
          className={t.id === props.current ? 'tab active' : 'tab'}
          onClick={() => props.onChange(t.id)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

export function Pager(props: {
  offset: number;
  limit: number;
  total: number;
  onChange: (offset: number) => void;
}) {
  if (props.total <= props.limit && props.offset === 0) return null;
  const end = Math.min(props.total, props.offset + props.limit);
  return (
    <div className="pager">
      <button
        type="button"
        disabled={props.offset === 0}
        onClick={() => props.onChange(Math.max(0, props.offset - props.limit))}
      >
        Previous
      </button>
      <span className="muted">
        {props.total === 0 ? 0 : props.offset + 1}–{end} of {props.total}
      </span>
      <button
        type="button"
        disabled={end >= props.total}
        onClick={() => props.onChange(props.offset + props.limit)}
      >
        Next
      </button>
    </div>
  );
}

/** The <option>s of a container <select>, valued by label (after the caller's own empty option). */
export function ContainerOptions(props: { containers: readonly Container[] | undefined }) {
  return (
    <>
      {(props.containers ?? []).map((c) => (
        <option key={c.id} value={c.label}>
          {c.label}
        </option>
      ))}
    </>
  );
}

export function Empty(props: { children: ReactNode }) {
  return <div className="empty muted">{props.children}</div>;
}

/** The project's sections; `only`: just these (a reviewer sees Review alone). */
export function SubNav(props: { project: string; current: string; only?: readonly string[] }) {
  const all = [
    ['runs', 'Runs'],
    ['evaluators', 'Evaluators'],
    ['datasets', 'Datasets'],
    ['containers', 'Containers'],
    ['monitors', 'Monitors'],
    ['guards', 'Guards'],
    ['traces', 'Traces'],
    ['sessions', 'Sessions'],
    ['review', 'Review'],
    ['playground', 'Playground'],
    ['models', 'Models'],
    ['settings', 'Settings'],
  ] as const;
  const items = props.only ? all.filter(([id]) => props.only?.includes(id)) : all;
  return (
    <nav className="subnav" aria-label="Project">
      {items.map(([id, label]) => (
        <Link
          key={id}
          to={`/projects/${props.project}/${id}`}
          className={props.current === id ? 'active' : undefined}
        >
          {label}
        </Link>
      ))}
    </nav>
  );
}
