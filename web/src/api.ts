import { useCallback, useEffect, useState } from 'react';

/** A refused dashboard request: the service's error envelope, or its 422 list of problems. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const BASE = '/dashboard/api';
let csrfToken = '';

/** The session's CSRF token, sent with every state-changing request (from GET /me). */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

const signedOutListeners = new Set<() => void>();
/** Called when the server says the session is gone (expired, signed out elsewhere). */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

interface Envelope {
  error?: { code?: string; message?: string };
  detail?: { loc?: (string | number)[]; msg?: string }[];
}

function failureOf(status: number, body: unknown): ApiFailure {
  const e = (body ?? {}) as Envelope;
  if (Array.isArray(e.detail)) {
    const text = e.detail.map((d) => `${(d.loc ?? []).slice(1).join('.') || 'request'}: ${d.msg}`).join('; ');
    return new ApiFailure(status, 'validation_error', text);
  }
  return new ApiFailure(status, e.error?.code ?? 'error', e.error?.message ?? `Request failed (${status})`);
}

function handleStatus(status: number): void {
  if (status === 401) for (const listener of signedOutListeners) listener();
}

type QueryValue = string | number | boolean | null | undefined;

/** `?a=1&b=2` of the values that are set. */
export function query(params: Record<string, QueryValue>): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') search.set(k, String(v));
  const text = search.toString();
  return text ? `?${text}` : '';
}

export async function api<T>(path: string, options: { method?: string; body?: unknown } = {}): Promise<T> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  const res = await fetch(BASE + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    credentials: 'same-origin',
  });
  const text = await res.text();
  const body: unknown = text ? JSON.parse(text) : undefined;
  if (!res.ok) {
    handleStatus(res.status);
    throw failureOf(res.status, body);
  }
  return body as T;
}

/** A POST of a file body with upload progress (fetch cannot report it). */
export function upload<T>(
  path: string,
  body: Blob,
  contentType: string,
  onProgress: (fraction: number) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', BASE + path);
    xhr.setRequestHeader('content-type', contentType);
    xhr.setRequestHeader('accept', 'application/json');
    xhr.setRequestHeader('x-csrf-token', csrfToken);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      let parsed: unknown;
      try {
        parsed = xhr.responseText ? JSON.parse(xhr.responseText) : undefined;
      } catch {
        parsed = undefined;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(parsed as T);
      else {
        handleStatus(xhr.status);
        reject(failureOf(xhr.status, parsed));
      }
    };
    xhr.onerror = () => reject(new ApiFailure(0, 'network_error', 'The upload failed: network error'));
    xhr.send(body);
  });
}

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload: () => void;
}

/** GETs `path` (null: nothing yet) and again on `reload()`; keeps the last data while reloading. */
export function useApi<T>(path: string | null): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const [loading, setLoading] = useState(path !== null);
  const [tick, setTick] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: tick asks for the same path again
  useEffect(() => {
    if (path === null) return;
    let live = true;
    setLoading(true);
    api<T>(path)
      .then((d) => {
        if (!live) return;
        setData(d);
        setError(undefined);
      })
      .catch((e: Error) => live && setError(e))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [path, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

export interface ListOf<T> {
  object: 'list';
  data: T[];
  total: number;
}

/**
 * A POST answered with server-sent events: each event handed to `onEvent` as it arrives. A refusal
 * before the stream starts (a 4xx in the error envelope) is thrown as for `api`.
 */
export async function postStream(
  path: string,
  body: unknown,
  onEvent: (event: string, data: unknown) => void,
  signal?: AbortSignal,
): Promise<void> {
  const res = await fetch(BASE + path, {
    method: 'POST',
    headers: { accept: 'text/event-stream', 'content-type': 'application/json', 'x-csrf-token': csrfToken },
    body: JSON.stringify(body),
    credentials: 'same-origin',
    signal,
  });
  if (!res.ok || !res.body) {
    const text = await res.text();
    handleStatus(res.status);
    throw failureOf(res.status, text ? JSON.parse(text) : undefined);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data !== undefined) onEvent(event, JSON.parse(data));
    }
  }
}
