import type { Evalgate, Run } from '../client/index.js';
import { NotFoundError } from '../client/index.js';

/**
 * Names for the ids the API answers with (a run's container, evaluators and datasets, a monitor's
 * container and evaluators), for tables people read: each id is looked up once per command. An id whose
 * resource is gone (deleted since) stays an id. `--json` output never goes through here.
 */
export class Names {
  readonly #client: Evalgate;
  readonly #cache = new Map<string, Promise<string>>();

  constructor(client: Evalgate) {
    this.#client = client;
  }

  container(id: string | null | undefined): Promise<string | null> {
    return this.#name(id, 'ctr', (ref) => this.#client.containers.get(ref).then((c) => c.label));
  }

  dataset(id: string | null | undefined): Promise<string | null> {
    return this.#name(id, 'ds', (ref) => this.#client.datasets.get(ref).then((d) => d.label));
  }

  evaluator(id: string | null | undefined): Promise<string | null> {
    return this.#name(id, 'evl', (ref) => this.#client.evaluators.get(ref).then((e) => e.name));
  }

  evaluators(ids: readonly string[] | null | undefined): Promise<string[] | null> {
    if (!ids) return Promise.resolve(null);
    return Promise.all(ids.map(async (id) => (await this.evaluator(id)) ?? id));
  }

  /** A copy of the run with names where it holds ids, for the people's view of it. */
  async run(run: Run): Promise<Run> {
    const side = async (s: Run['sample']): Promise<Run['sample']> => {
      if (!s) return s;
      const named = { ...s };
      if (s.dataset !== undefined) named.dataset = (await this.dataset(s.dataset)) ?? s.dataset;
      if (s.container !== undefined) named.container = (await this.container(s.container)) ?? s.container;
      return named;
    };
    const [container, evaluators, sample, groundTruth, baseline] = await Promise.all([
      this.container(run.container),
      this.evaluators(run.evaluators),
      side(run.sample),
      side(run.ground_truth),
      side(run.baseline),
    ]);
    return { ...run, container, evaluators, sample, ground_truth: groundTruth, baseline };
  }

  #name(
    id: string | null | undefined,
    prefix: string,
    fetch: (id: string) => Promise<string>,
  ): Promise<string | null> {
    if (id === null || id === undefined) return Promise.resolve(null);
    // Already a name (or not an id of this kind): shown as it is.
    if (!id.startsWith(`${prefix}_`)) return Promise.resolve(id);
    let name = this.#cache.get(id);
    if (!name) {
      name = fetch(id).catch((err: unknown) => {
        if (err instanceof NotFoundError) return id;
        throw err;
      });
      this.#cache.set(id, name);
    }
    return name;
  }
}
