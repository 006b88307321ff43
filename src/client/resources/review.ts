import type { Dataset } from '../../catalog/datasets/schemas.js';
import type { RequestOptions, Transport } from '../http.js';
import type { ListResponse, PagePromise } from '../pagination.js';
import type {
  AddItems,
  AnnotationItem,
  AnnotationItemView,
  AnnotationQueue,
  AnnotationReview,
  AnnotationSettlement,
  ClaimResponse,
  CorrectReview,
  CreateQueue,
  FlagParams,
  ItemState,
  ItemsAddedResponse,
  JudgeTemplate,
  ListItemsParams,
  ListReviewsParams,
  PatchQueue,
  QueueAgreementParams,
  QueueAgreementResult,
  QueueDeletedResponse,
  QueueSettledResponse,
  ReviewSubmitted,
  ScoresParams,
  SettleItem,
  SubmitReview,
} from './review-types.js';
import { listPages, seg } from './shared.js';

const queuePath = (queue: string) => `/v1/annotation-queues/${seg(queue)}`;
const itemPath = (queue: string, item: string) => `${queuePath(queue)}/items/${seg(item)}`;

/** A queue's items: added by reference or by rules, read as a reviewer sees them, reviewed, skipped, flagged. */
export class AnnotationItems {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Task logs, sessions, run positions and rules over a run's scores; an item is queued once. */
  add(queue: string, body: AddItems, options?: RequestOptions): Promise<ItemsAddedResponse> {
    return this.#transport.request({
      method: 'POST',
      path: `${queuePath(queue)}/items`,
      json: body,
      options,
    });
  }

  /** In the order they were added, optionally of one state (`open`, `done`, `flagged`). */
  list(queue: string, params: ListItemsParams = {}, options?: RequestOptions): PagePromise<AnnotationItem> {
    return listPages(this.#transport, `${queuePath(queue)}/items`, params, options);
  }

  /** The item with its content and (unless `hideJudge`) the judges' verdicts. */
  get(
    queue: string,
    item: string,
    params: { hideJudge?: boolean } = {},
    options?: RequestOptions,
  ): Promise<AnnotationItemView> {
    return this.#transport.request({
      method: 'GET',
      path: itemPath(queue, item),
      query: { hide_judge: params.hideJudge },
      options,
    });
  }

  /** One human score per rubric evaluator (and a comment); 409 when someone else holds the item. */
  review(
    queue: string,
    item: string,
    body: SubmitReview,
    options?: RequestOptions,
  ): Promise<ReviewSubmitted> {
    return this.#transport.request({
      method: 'POST',
      path: `${itemPath(queue, item)}/review`,
      json: body,
      options,
    });
  }

  /** Gives the claim back: the item returns to the others, never to this reviewer. */
  skip(queue: string, item: string, options?: RequestOptions): Promise<ItemState> {
    return this.#transport.request({ method: 'POST', path: `${itemPath(queue, item)}/skip`, options });
  }

  /** Takes the item out of the queue, with the reason. */
  flag(queue: string, item: string, body: FlagParams, options?: RequestOptions): Promise<ItemState> {
    return this.#transport.request({
      method: 'POST',
      path: `${itemPath(queue, item)}/flag`,
      json: body,
      options,
    });
  }

  /** Settles the item's answer on an evaluator: the majority's, one review's, or a value (needs review:admin). */
  settle(
    queue: string,
    item: string,
    body: SettleItem,
    options?: RequestOptions,
  ): Promise<AnnotationSettlement> {
    return this.#transport.request({
      method: 'POST',
      path: `${itemPath(queue, item)}/settle`,
      json: body,
      options,
    });
  }
}

/** A queue's human reviews, and their corrections. */
export class AnnotationReviews {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Current reviews (with `history: true`, the corrected ones too), optionally of one item. */
  list(
    queue: string,
    params: ListReviewsParams = {},
    options?: RequestOptions,
  ): PagePromise<AnnotationReview> {
    return listPages(this.#transport, `${queuePath(queue)}/reviews`, params, options);
  }

  /** A new review replaces `review`; the old one is kept as history. */
  correct(
    queue: string,
    review: string,
    body: CorrectReview,
    options?: RequestOptions,
  ): Promise<AnnotationReview> {
    return this.#transport.request({
      method: 'POST',
      path: `${queuePath(queue)}/reviews/${seg(review)}/correct`,
      json: body,
      options,
    });
  }
}

/** `/v1/annotation-queues`: human review queues, by id (`aq_…`) or name. */
export class AnnotationQueues {
  readonly #transport: Transport;
  readonly items: AnnotationItems;
  readonly reviews: AnnotationReviews;

  constructor(transport: Transport) {
    this.#transport = transport;
    this.items = new AnnotationItems(transport);
    this.reviews = new AnnotationReviews(transport);
  }

  /** Newest first, with their counts. */
  list(
    params: { limit?: number; offset?: number } = {},
    options?: RequestOptions,
  ): PagePromise<AnnotationQueue> {
    return listPages(this.#transport, '/v1/annotation-queues', params, options);
  }

  create(body: CreateQueue, options?: RequestOptions): Promise<AnnotationQueue> {
    return this.#transport.request({ method: 'POST', path: '/v1/annotation-queues', json: body, options });
  }

  get(queue: string, options?: RequestOptions): Promise<AnnotationQueue> {
    return this.#transport.request({ method: 'GET', path: queuePath(queue), options });
  }

  update(queue: string, patch: PatchQueue, options?: RequestOptions): Promise<AnnotationQueue> {
    return this.#transport.request({ method: 'PATCH', path: queuePath(queue), json: patch, options });
  }

  /** With its items and reviews. */
  delete(queue: string, options?: RequestOptions): Promise<QueueDeletedResponse> {
    return this.#transport.request({ method: 'DELETE', path: queuePath(queue), options });
  }

  /** The reviewer's live claim, else the next item they have never seen (`item` null when none is left). */
  claim(
    queue: string,
    params: { hideJudge?: boolean } = {},
    options?: RequestOptions,
  ): Promise<ClaimResponse> {
    return this.#transport.request({
      method: 'POST',
      path: `${queuePath(queue)}/claim`,
      query: { hide_judge: params.hideJudge },
      options,
    });
  }

  /** Agreement of each rubric evaluator over the queue's reviews. */
  agreement(
    queue: string,
    params: QueueAgreementParams = {},
    options?: RequestOptions,
  ): Promise<QueueAgreementResult> {
    return this.#transport.request({
      method: 'GET',
      path: `${queuePath(queue)}/agreement`,
      query: params,
      options,
    });
  }

  /** Settles every open disagreement on an evaluator by majority; ties stay open (needs review:admin). */
  settle(
    queue: string,
    body: { method: 'majority'; evaluator?: string },
    options?: RequestOptions,
  ): Promise<QueueSettledResponse> {
    return this.#transport.request({
      method: 'POST',
      path: `${queuePath(queue)}/settle`,
      json: body,
      options,
    });
  }

  /**
   * Every human score: JSON lines (one item and evaluator a line, every review in it, and the settled
   * answer) or CSV (one review a row). The response is handed over unread, to be streamed.
   */
  scores(queue: string, params: ScoresParams = {}, options?: RequestOptions): Promise<Response> {
    return this.#transport.stream({
      method: 'GET',
      path: `${queuePath(queue)}/scores`,
      query: params,
      options,
    });
  }

  /** A dataset of the reviewed items, the settled human answer as `expected`. */
  export(
    queue: string,
    body: { label: string; evaluator?: string },
    options?: RequestOptions,
  ): Promise<Dataset> {
    return this.#transport.request({
      method: 'POST',
      path: `${queuePath(queue)}/export`,
      json: body,
      options,
    });
  }
}

/** `/v1/evaluator-templates`: the built-in, versioned judge catalog. */
export class EvaluatorTemplates {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Every template (one list, not paged). */
  list(options?: RequestOptions): Promise<ListResponse<JudgeTemplate>> {
    return this.#transport.request({ method: 'GET', path: '/v1/evaluator-templates', options });
  }

  /** `name@version`, or `name` for its latest version. */
  get(template: string, options?: RequestOptions): Promise<JudgeTemplate> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/evaluator-templates/${seg(template)}`,
      options,
    });
  }
}
