import type {
  ListSessionsQuery,
  Session,
  SessionDetail,
  SessionTurnsQuery,
  ToolStepDetail,
} from '../../sessions/schemas.js';
import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import { listPages, seg } from './shared.js';

/** `/v1/sessions`: conversations and agent runs, the gateway's calls grouped as they are recorded. */
export class Sessions {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Newest first, with their totals; filtered by container, time, model, errors and length. */
  list(params: ListSessionsQuery = {}, options?: RequestOptions): PagePromise<Session> {
    return listPages(this.#transport, '/v1/sessions', params, options);
  }

  /**
   * The session's calls in order (messages, tool calls with arguments and results, scores); a long
   * session is read in pages of turns (`turns_offset`, `turns_limit` up to the server's limit).
   */
  get(session: string, turns: SessionTurnsQuery = {}, options?: RequestOptions): Promise<SessionDetail> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/sessions/${seg(session)}`,
      query: { ...turns },
      options,
    });
  }

  /**
   * A tool step: one tool call of the session (name, arguments, result), the conversation before it, and
   * the scores tool-step runs gave it.
   */
  toolCall(session: string, toolCallId: string, options?: RequestOptions): Promise<ToolStepDetail> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/sessions/${seg(session)}/tool-calls/${seg(toolCallId)}`,
      options,
    });
  }

  /**
   * Ends the session: a session monitor scores it at its next sweep instead of waiting for it to be idle.
   * A call that joins it later opens it again.
   */
  end(session: string, options?: RequestOptions): Promise<Session> {
    return this.#transport.request({ method: 'POST', path: `/v1/sessions/${seg(session)}/end`, options });
  }
}
