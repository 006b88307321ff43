import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type {
  Budget,
  BudgetAdmin,
  BudgetPeriod,
  BudgetScopeKind,
  BudgetState,
  Payer,
  Reservation,
  Spend,
  SpendGuard,
} from '../shared/budget.js';
import { ApiError } from '../shared/errors.js';
import type { SpendCounter } from './counter.js';
import { PeriodClock } from './period.js';
import { type CounterKey, deleteBudget, projectBudgets, putBudget } from './repository.js';

/** A project's budgets: its own and its keys'. */
interface ProjectBudgets {
  project: Budget | null;
  keys: Map<string, Budget>;
}

interface Scope {
  scope: BudgetScopeKind;
  id: string;
  budget: Budget;
}

export interface BudgetDeps {
  db: Kysely<Database>;
  counter: SpendCounter;
  /** How long a project's budgets are trusted without a database look-up (a change made through another process takes this long). */
  cacheMs: number;
  /** Epoch milliseconds; a test moves it to a next period. */
  now?: () => number;
  /** Told once per outage when the budgets or their counters cannot be read or written. */
  warn?: (message: string) => void;
}

const EMPTY: ProjectBudgets = { project: null, keys: new Map() };
const PERIOD_WORDS: Record<BudgetPeriod, string> = { day: 'daily', month: 'monthly', total: 'total' };
const round = (usd: number) => Math.round(usd * 1e9) / 1e9;
/**
 * Spend this close under a limit counts as reaching it: a reservation settled to the actual cost leaves
 * floating-point residue (0.5 + (0.0082 − 0.5) is not 0.0082).
 */
const EPSILON_USD = 1e-12;
const reached = (used: number, limit: number) => used + EPSILON_USD >= limit;

/**
 * Budgets on API keys and projects: the check before every upstream call (the gateway's routes and the
 * run engine), the charge after it, and the views and changes of the key and project routes.
 */
export class Budgets implements SpendGuard, BudgetAdmin {
  private readonly cache = new Map<
    string,
    { until: number; value: ProjectBudgets | null; load: Promise<ProjectBudgets> }
  >();
  private readonly clock: PeriodClock;
  /** Charges waiting for their project's budgets to load (finished before `close`). */
  private readonly charging = new Set<Promise<void>>();
  /** Whether the budget store is known to be unreachable (calls pass unchecked until it answers again). */
  private outage = false;

  constructor(private readonly deps: BudgetDeps) {
    this.clock = new PeriodClock(deps.now ?? Date.now);
  }

  /** The project's budgets: from memory when fresh (synchronously), else loaded once for every caller. */
  private definitions(projectId: string): ProjectBudgets | Promise<ProjectBudgets> {
    const now = Date.now();
    const hit = this.cache.get(projectId);
    if (hit && hit.until > now) return hit.value ?? hit.load;
    const stale = hit?.value ?? null;
    const load = projectBudgets(this.deps.db, projectId).then((records) => {
      if (records.length === 0) return EMPTY;
      const out: ProjectBudgets = { project: null, keys: new Map() };
      for (const r of records) {
        if (r.scope === 'project') out.project = r.budget;
        else out.keys.set(r.scopeId, r.budget);
      }
      return out;
    });
    const entry = { until: now + this.deps.cacheMs, value: null as ProjectBudgets | null, load };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(projectId, entry);
    load.then(
      (value) => {
        entry.value = value;
      },
      () => {
        if (this.cache.get(projectId) !== entry) return;
        // The database is away: what was known before holds until it answers again.
        if (stale) this.cache.set(projectId, { until: Date.now() + this.deps.cacheMs, value: stale, load });
        else this.cache.delete(projectId);
      },
    );
    return stale ? load.catch(() => stale) : load;
  }

  private scopes(defs: ProjectBudgets, payer: Payer): Scope[] {
    const out: Scope[] = [];
    const key = payer.keyId === null ? undefined : defs.keys.get(payer.keyId);
    if (key && payer.keyId !== null) out.push({ scope: 'key', id: payer.keyId, budget: key });
    if (defs.project) out.push({ scope: 'project', id: payer.projectId, budget: defs.project });
    return out;
  }

  private counterKey(s: { scope: BudgetScopeKind; id: string; budget: Budget }): CounterKey {
    return { scope: s.scope, scopeId: s.id, periodStart: this.clock.current(s.budget.period).startIso };
  }

  /**
   * Refuses the call when the key's or the project's budget is spent. A budget store that cannot be read
   * (the database or Redis away) lets the call through, told once per outage: budgets never turn an
   * outage of their store into one of the gateway.
   */
  async check(payer: Payer): Promise<void> {
    let used: number[];
    let scopes: Scope[];
    try {
      const found = this.definitions(payer.projectId);
      const defs = found instanceof Promise ? await found : found;
      if (defs === EMPTY) return this.recovered();
      scopes = this.scopes(defs, payer);
      if (scopes.length === 0) return this.recovered();
      const counted = this.deps.counter.read(scopes.map((s) => this.counterKey(s)));
      used = counted instanceof Promise ? await counted : counted;
      this.recovered();
    } catch (err) {
      this.unavailable(err);
      return;
    }
    scopes.forEach((s, i) => {
      const spent = used[i] ?? 0;
      if (reached(spent, s.budget.limit_usd)) throw this.exceeded(s, spent);
    });
  }

  async reserve(payer: Payer, usd: number): Promise<Reservation> {
    const amount = Math.max(usd, 0);
    let scopes: Scope[];
    let keys: CounterKey[];
    let totals: number[];
    try {
      const found = this.definitions(payer.projectId);
      const defs = found instanceof Promise ? await found : found;
      scopes = defs === EMPTY ? [] : this.scopes(defs, payer);
      if (scopes.length === 0) {
        this.recovered();
        return this.unreserved(payer);
      }
      keys = scopes.map((s) => this.counterKey(s));
      const counted = this.deps.counter.reserve(keys, amount);
      totals = counted instanceof Promise ? await counted : counted;
      this.recovered();
    } catch (err) {
      this.unavailable(err);
      return this.unreserved(payer);
    }
    const over = scopes.findIndex((s, i) => reached((totals[i] ?? 0) - amount, s.budget.limit_usd));
    const refused = scopes[over];
    if (refused) {
      // Given back before the refusal is answered, so that the caller's next call does not meet it.
      if (amount > 0) await this.counted(this.deps.counter.add(keys, -amount));
      throw this.exceeded(refused, (totals[over] ?? 0) - amount);
    }
    let settled = false;
    return {
      settle: (actual) => {
        if (settled) return undefined;
        settled = true;
        const delta = Math.max(actual, 0) - amount;
        return delta === 0 ? undefined : this.counted(this.deps.counter.add(keys, delta));
      },
    };
  }

  /** A reservation where no budget applies (or its store is away): the cost is charged as it is. */
  private unreserved(payer: Payer): Reservation {
    return { settle: (actual) => this.charge(payer, actual) };
  }

  private counted(p: Promise<void> | undefined): Promise<void> | undefined {
    return p?.catch((err: unknown) => this.unavailable(err));
  }

  charge(payer: Payer, usd: number): Promise<void> | undefined {
    if (!(usd > 0)) return undefined;
    const found = this.definitions(payer.projectId);
    const add = (defs: ProjectBudgets): Promise<void> | undefined => {
      if (defs === EMPTY) return undefined;
      const scopes = this.scopes(defs, payer);
      if (scopes.length === 0) return undefined;
      return this.deps.counter
        .add(
          scopes.map((s) => this.counterKey(s)),
          usd,
        )
        ?.catch((err: unknown) => this.unavailable(err));
    };
    if (!(found instanceof Promise)) return add(found);
    const p = found.then(add, (err: unknown) => this.unavailable(err));
    this.charging.add(p);
    void p.finally(() => this.charging.delete(p));
    return p;
  }

  private unavailable(err: unknown): void {
    if (this.outage) return;
    this.outage = true;
    const why = err instanceof Error ? err.message : String(err);
    this.deps.warn?.(
      `Budgets cannot be read or counted (${why}); calls pass unchecked until the store answers`,
    );
  }

  private recovered(): void {
    if (!this.outage) return;
    this.outage = false;
    this.deps.warn?.('Budgets are read and counted again');
  }

  private exceeded(s: Scope, used: number): ApiError {
    const { resetsAt } = this.clock.current(s.budget.period);
    const who = s.scope === 'key' ? 'This API key' : 'This project';
    const headers: Record<string, string> = { 'x-should-retry': 'false' };
    let when = '; it does not reset (a total budget)';
    if (resetsAt !== null) {
      const seconds = Math.max(1, Math.ceil((resetsAt - this.clock.time()) / 1000));
      headers['Retry-After'] = String(seconds);
      when = `; it resets at ${new Date(resetsAt).toISOString()}`;
    }
    return new ApiError(
      'budget_exceeded',
      `${who} has spent $${round(used)} of its ${PERIOD_WORDS[s.budget.period]} budget of $${s.budget.limit_usd}${when}`,
      {
        scope: s.scope,
        id: s.id,
        period: s.budget.period,
        limit_usd: s.budget.limit_usd,
        used_usd: round(used),
        resets_at: resetsAt === null ? null : new Date(resetsAt).toISOString(),
      },
      [],
      headers,
    );
  }

  private async states(scopes: Scope[]): Promise<BudgetState[]> {
    if (scopes.length === 0) return [];
    const keys = scopes.map((s) => this.counterKey(s));
    const used = await this.deps.counter.read(keys);
    return scopes.map((s, i) => {
      const { resetsAt } = this.clock.current(s.budget.period);
      const spend: Spend = {
        period_start: keys[i]?.periodStart ?? new Date(0).toISOString(),
        used_usd: round(used[i] ?? 0),
        limit_usd: s.budget.limit_usd,
        resets_at: resetsAt === null ? null : new Date(resetsAt).toISOString(),
      };
      return { budget: s.budget, spend };
    });
  }

  async keys(projectId: string, keyIds: readonly string[]): Promise<Map<string, BudgetState>> {
    this.cache.delete(projectId);
    const defs = await this.definitions(projectId);
    const scopes: Scope[] = [];
    for (const id of keyIds) {
      const budget = defs.keys.get(id);
      if (budget) scopes.push({ scope: 'key', id, budget });
    }
    const states = await this.states(scopes);
    return new Map(scopes.map((s, i) => [s.id, states[i] ?? { budget: null, spend: null }]));
  }

  async get(projectId: string, scope: BudgetScopeKind, id: string): Promise<BudgetState> {
    this.cache.delete(projectId);
    const defs = await this.definitions(projectId);
    const budget = scope === 'project' ? defs.project : (defs.keys.get(id) ?? null);
    if (!budget) return { budget: null, spend: null };
    const [state] = await this.states([{ scope, id, budget }]);
    return state ?? { budget: null, spend: null };
  }

  async set(
    projectId: string,
    scope: BudgetScopeKind,
    id: string,
    budget: Budget | null,
  ): Promise<BudgetState> {
    if (budget === null) await deleteBudget(this.deps.db, scope, id);
    else await putBudget(this.deps.db, projectId, scope, id, budget);
    return this.get(projectId, scope, id);
  }

  async close(): Promise<void> {
    await Promise.all(this.charging);
    await this.deps.counter.close();
  }
}
