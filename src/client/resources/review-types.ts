/** The review resources' types, inferred from the very schemas the server validates with. */
import type { Static } from 'typebox';
import type { JudgeTemplate } from '../../catalog/judge-templates/catalog.js';
import type { Agreement, AgreementQuery, QueueAgreement } from '../../review/agreement/service.js';
import type {
  AddItems,
  ClaimResult,
  CorrectReview,
  CreateQueue,
  FlagBody,
  Item,
  ItemDone,
  ItemsAdded,
  ItemView,
  ListItemsQuery,
  ListReviewsQuery,
  PatchQueue,
  Queue,
  QueueDeleted,
  Review,
  SubmitReview,
} from '../../review/schemas.js';
import type { ExportScoresQuery, QueueSettled, SettleItem, Settlement } from '../../review/schemas-settle.js';

export type {
  AddItems,
  Agreement,
  CorrectReview,
  CreateQueue,
  Item as AnnotationItem,
  ItemView as AnnotationItemView,
  JudgeTemplate,
  PatchQueue,
  Queue as AnnotationQueue,
  Review as AnnotationReview,
  SubmitReview,
};
export type QueueAgreementResult = Static<typeof QueueAgreement>;
export type AgreementParams = AgreementQuery;
export type QueueAgreementParams = Pick<AgreementQuery, 'seed' | 'resamples'>;
export type ItemsAddedResponse = Static<typeof ItemsAdded>;
export type ClaimResponse = Static<typeof ClaimResult>;
export type ReviewSubmitted = Static<typeof ItemDone>;
export type QueueDeletedResponse = Static<typeof QueueDeleted>;
export type ListItemsParams = Static<typeof ListItemsQuery>;
export type ListReviewsParams = Static<typeof ListReviewsQuery>;
export type FlagParams = Static<typeof FlagBody>;
/** What skip and flag answer: the item and its state after. */
export interface ItemState {
  object: 'annotation_item';
  id: string;
  state: string;
}
export type { SettleItem };
export type AnnotationSettlement = Static<typeof Settlement>;
export type QueueSettledResponse = Static<typeof QueueSettled>;
export type ScoresParams = ExportScoresQuery;
