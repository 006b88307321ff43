import { createHmac } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { UpstreamUrlCheck } from '../llm/models/types.js';
import { parseJson } from '../shared/json.js';
import type { AlertRule } from './schemas.js';

/** The alert webhook's signature header: `sha256=` and the hex HMAC-SHA256 of the body under the monitor's secret. */
export const SIGNATURE_HEADER = 'X-Evalgate-Signature';

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export type AlertState = 'firing' | 'resolved';

/** The metric of an alert's evaluator over its window (calls recorded within it), computed by the database. */
export async function alertMetric(
  db: Kysely<Database>,
  m: { id: string; run_id: string },
  rule: AlertRule,
  now: number,
): Promise<{ value: number | null; samples: number }> {
  const since = new Date(now - rule.window * 1000).toISOString();
  const result = await sql<{
    n: number | string;
    passed: number | string | null;
    avg: number | string | null;
  }>`
    select count(*) as n, sum(case when s.passed = 1 then 1 else 0 end) as passed, avg(s.score) as avg
    from run_samples s join monitor_selections ms on ms.monitor_id = ${m.id} and ms.position = s.position
    where s.run_id = ${m.run_id} and s.evaluator_id = ${rule.evaluator} and s.status = 'scored'
      and ms.log_created_at >= ${since}`.execute(db);
  const row = result.rows[0];
  const n = Number(row?.n ?? 0);
  if (n === 0) return { value: null, samples: 0 };
  const value =
    rule.metric === 'pass_rate' ? Number(row?.passed ?? 0) / n : row?.avg === null ? null : Number(row?.avg);
  return { value, samples: n };
}

export interface AlertOptions {
  db: Kysely<Database>;
  /** The upstream safety policy, checked on the webhook URL before every attempt. */
  checkUrl: UpstreamUrlCheck;
  warn(message: string): void;
  /** How often the rules are evaluated. */
  intervalMs?: number;
  /** Retries of one webhook delivery after its first attempt, and the first back-off (doubled each time). */
  retries?: number;
  backoffMs?: number;
}

/** Retries after the first attempt of a webhook delivery (so at most 1 + 5 POSTs). */
export const WEBHOOK_RETRIES = 5;

export interface DeliveryOptions {
  checkUrl: UpstreamUrlCheck;
  warn(message: string): void;
  retries?: number;
  backoffMs?: number;
  /** Stops retrying (the process is closing). */
  stopped?: () => boolean;
}

/**
 * POSTs a signed alert body: the first attempt and up to `retries` more (5xx, 429, a failed connection),
 * waiting `backoffMs` (0.5 s) before the first retry and twice as long before each next one. Another 4xx
 * is not retried; redirects are not followed; the URL passes the upstream policy before every attempt.
 * Returns the number of POSTs attempted.
 */
export async function deliverWebhook(
  url: string,
  secret: string,
  body: string,
  label: string,
  options: DeliveryOptions,
): Promise<number> {
  const retries = options.retries ?? WEBHOOK_RETRIES;
  const attempts = 1 + retries;
  let wait = options.backoffMs ?? 500;
  let made = 0;
  for (let attempt = 1; attempt <= attempts && !options.stopped?.(); attempt++) {
    const verdict = await options.checkUrl(url);
    if (!verdict.ok) {
      options.warn(`${label}: alert webhook not sent, ${verdict.reason}`);
      return made;
    }
    made++;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signBody(secret, body) },
        body,
        // A redirect could lead past the policy: it is not followed.
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer().catch(() => {});
      if (res.status < 300) return made;
      if (res.status < 500 && res.status !== 429) {
        options.warn(`${label}: alert webhook answered ${res.status}; not retried`);
        return made;
      }
    } catch {
      // Retried below.
    }
    if (attempt < attempts) {
      await new Promise((r) => setTimeout(r, wait).unref());
      wait *= 2;
    }
  }
  options.warn(`${label}: alert webhook failed after ${made} attempts (${retries} retries)`);
  return made;
}

/**
 * Evaluates every monitor's alert rule over its window, and on a change of state (below the bound:
 * `firing`; back at or above it: `resolved`) stores the new state with a guarded update — so that of any
 * number of processes, only the one that made the change sends it — then POSTs the signed webhook,
 * retrying with back-off. A rule with fewer than `min_samples` scored calls in its window decides nothing;
 * the first decision that the metric is fine is stored without a webhook (nothing had fired).
 */
export class AlertWatcher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private readonly deliveries = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly options: AlertOptions) {}

  start(): void {
    const tick = () => {
      if (this.closed || this.running) return;
      this.running = this.evaluate()
        .catch((err: unknown) => this.options.warn(`monitor alerts: ${(err as Error).message}`))
        .finally(() => {
          this.running = null;
        });
    };
    this.timer = setInterval(tick, this.options.intervalMs ?? 1000);
    this.timer.unref();
  }

  async evaluate(now = Date.now()): Promise<void> {
    const { db } = this.options;
    const monitors = await db
      .selectFrom('monitors')
      .select(['id', 'name', 'run_id', 'alert', 'alert_secret', 'alert_state'])
      .where('alert', 'is not', null)
      .execute();
    for (const m of monitors) {
      const rule = parseJson<AlertRule | null>(m.alert, null);
      if (!rule) continue;
      const { value, samples } = await alertMetric(db, m, rule, now);
      if (value === null || samples < (rule.min_samples ?? 10)) continue;
      const next: AlertState = value < rule.below ? 'firing' : 'resolved';
      if (m.alert_state === next) continue;
      const moved = await db
        .updateTable('monitors')
        .set({ alert_state: next })
        .where('id', '=', m.id)
        .where((eb) =>
          m.alert_state === null ? eb('alert_state', 'is', null) : eb('alert_state', '=', m.alert_state),
        )
        .where('alert', '=', m.alert)
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) === 0) continue;
      // The first decision that all is well is not news.
      if (m.alert_state === null && next === 'resolved') continue;
      const body = JSON.stringify({
        type: next === 'firing' ? 'monitor.alert.firing' : 'monitor.alert.resolved',
        monitor: { id: m.id, name: m.name },
        evaluator: rule.evaluator,
        metric: rule.metric,
        value,
        below: rule.below,
        window: rule.window,
        samples,
        at: new Date(now).toISOString(),
      });
      const delivery = this.deliver(rule.webhook_url, m.alert_secret ?? '', body, m.id).finally(() =>
        this.deliveries.delete(delivery),
      );
      this.deliveries.add(delivery);
    }
  }

  private async deliver(url: string, secret: string, body: string, monitorId: string): Promise<void> {
    await deliverWebhook(url, secret, body, `monitor ${monitorId}`, {
      ...this.options,
      stopped: () => this.closed,
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await Promise.allSettled([...this.deliveries]);
  }
}
