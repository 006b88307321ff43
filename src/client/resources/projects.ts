import type { RequestOptions, Transport } from '../http.js';
import type { Budget, ProjectBudget } from '../types.js';
import { seg } from './shared.js';

/** `/v1/projects/{project}`: the calling key's project (its id, or `current`). */
export class Projects {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The project's budget and the spend of its current period (`keys:read`). */
  retrieveBudget(project = 'current', options?: RequestOptions): Promise<ProjectBudget> {
    return this.#transport.request({ method: 'GET', path: `/v1/projects/${seg(project)}/budget`, options });
  }

  /** Sets the project's budget (`keys:write`): its gateway calls and runs stop once it is spent. */
  setBudget(budget: Budget, project = 'current', options?: RequestOptions): Promise<ProjectBudget> {
    return this.#transport.request({
      method: 'PUT',
      path: `/v1/projects/${seg(project)}/budget`,
      json: budget,
      options,
    });
  }

  /** Removes the project's budget (`keys:write`). */
  deleteBudget(project = 'current', options?: RequestOptions): Promise<ProjectBudget> {
    return this.#transport.request({
      method: 'DELETE',
      path: `/v1/projects/${seg(project)}/budget`,
      options,
    });
  }
}
