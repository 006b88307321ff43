import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { nowIso } from '../shared/ids.js';
import type { ItemRow } from './items.js';
import type { QueueRow } from './queues.js';

/**
 * Who holds or has done each item. An item's `taken` counts its live claims and its reviews, and a claim
 * is taken only by a guarded update (`taken < needed`), so an item never has more people on it than it
 * needs; a reviewer has at most one row per item (claimed, reviewed or skipped), so no one is offered
 * an item twice. A claim that expires is deleted and its place given back.
 */

type Db = Kysely<Database>;

const REAP_BATCH = 500;

/** Gives back the places of a queue's expired claims (each exactly once, whoever else reaps at once). */
export async function reapExpired(db: Db, queueId: string, now = Date.now()): Promise<number> {
  let reaped = 0;
  for (;;) {
    const expired = await db
      .selectFrom('annotation_assignments')
      .select(['item_id', 'reviewer'])
      .where('queue_id', '=', queueId)
      .where('state', '=', 'claimed')
      .where('expires_at', '<=', now)
      .limit(REAP_BATCH)
      .execute();
    for (const e of expired) {
      if (await release(db, e.item_id, e.reviewer, now)) reaped += 1;
    }
    if (expired.length < REAP_BATCH) return reaped;
  }
}

/** Deletes one expired claim and gives its place back; false when someone else did first. */
async function release(db: Db, itemId: string, reviewer: string, now: number): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const gone = await tx
      .deleteFrom('annotation_assignments')
      .where('item_id', '=', itemId)
      .where('reviewer', '=', reviewer)
      .where('state', '=', 'claimed')
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    if (Number(gone.numDeletedRows) !== 1) return false;
    await giveBack(tx, itemId);
    return true;
  });
}

async function giveBack(db: Db, itemId: string): Promise<void> {
  await db
    .updateTable('annotation_items')
    .set({ taken: sql`taken - 1`, updated_at: nowIso() })
    .where('id', '=', itemId)
    .execute();
}

/** Takes a place on an item if one is free (guarded: never more than it needs); true when taken. */
export async function takePlace(db: Db, itemId: string): Promise<boolean> {
  const r = await db
    .updateTable('annotation_items')
    .set({ taken: sql`taken + 1`, updated_at: nowIso() })
    .where('id', '=', itemId)
    .where('state', '=', 'open')
    .where(sql<boolean>`taken < needed`)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** The reviewer's live claim in the queue, if any. */
export async function liveClaim(db: Db, queueId: string, reviewer: string, now = Date.now()) {
  return db
    .selectFrom('annotation_assignments')
    .select(['item_id', 'expires_at'])
    .where('queue_id', '=', queueId)
    .where('reviewer', '=', reviewer)
    .where('state', '=', 'claimed')
    .where('expires_at', '>', now)
    .orderBy('item_id')
    .executeTakeFirst();
}

/** Open items with a free place that this reviewer has never held, skipped or reviewed. */
function claimable(db: Db, queueId: string, reviewer: string) {
  return db
    .selectFrom('annotation_items as i')
    .where('i.queue_id', '=', queueId)
    .where('i.state', '=', 'open')
    .where(sql<boolean>`i.taken < i.needed`)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('annotation_assignments as a')
            .select('a.item_id')
            .whereRef('a.item_id', '=', 'i.id')
            .where('a.reviewer', '=', reviewer),
        ),
      ),
    );
}

export async function remainingFor(db: Db, queueId: string, reviewer: string): Promise<number> {
  const r = await claimable(db, queueId, reviewer)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Claims the next item for a reviewer: their live claim if they hold one, else the oldest open item with
 * a free place they have never seen. Null when there is none.
 */
export async function claimNext(db: Db, queue: QueueRow, reviewer: string): Promise<string | null> {
  const now = Date.now();
  await reapExpired(db, queue.id, now);
  const held = await liveClaim(db, queue.id, reviewer, now);
  if (held) return held.item_id;
  for (;;) {
    const candidates = await claimable(db, queue.id, reviewer)
      .select('i.id')
      .orderBy('i.id')
      .limit(20)
      .execute();
    if (candidates.length === 0) return null;
    for (const { id } of candidates) {
      const got = await db
        .transaction()
        .execute(async (tx) => {
          if (!(await takePlace(tx, id))) return false;
          await tx
            .insertInto('annotation_assignments')
            .values({
              item_id: id,
              reviewer,
              queue_id: queue.id,
              state: 'claimed',
              expires_at: now + queue.claim_seconds * 1000,
              updated_at: nowIso(),
            })
            .execute();
          return true;
        })
        .catch(() => false);
      if (got) return id;
    }
  }
}

/** The reviewer's row on an item, if any. */
export function assignmentOf(db: Db, itemId: string, reviewer: string) {
  return db
    .selectFrom('annotation_assignments')
    .selectAll()
    .where('item_id', '=', itemId)
    .where('reviewer', '=', reviewer)
    .executeTakeFirst();
}

/**
 * Makes sure the reviewer holds a place on the item to review it (inside the review's transaction): their
 * live claim, else a free place taken now; 409 when they reviewed it already or no place is free.
 */
export async function holdForReview(
  tx: Db,
  item: ItemRow,
  reviewer: string,
  now = Date.now(),
): Promise<void> {
  const mine = await assignmentOf(tx, item.id, reviewer);
  if (mine?.state === 'reviewed') {
    throw new ApiError('conflict', `You have already reviewed item ${item.id}; correct your review instead`, {
      item: item.id,
      reason: 'already_reviewed',
    });
  }
  if (mine?.state === 'skipped') {
    throw new ApiError(
      'conflict',
      `You skipped item ${item.id}: it is left to the other reviewers and takes no review of yours`,
      { item: item.id, reason: 'skipped' },
    );
  }
  if (mine?.state === 'claimed' && Number(mine.expires_at) > now) {
    await markReviewed(tx, item.id, reviewer);
    return;
  }
  if (mine?.state === 'claimed') {
    // Their claim expired: its place goes back before they may take one again.
    await tx
      .deleteFrom('annotation_assignments')
      .where('item_id', '=', item.id)
      .where('reviewer', '=', reviewer)
      .execute();
    await giveBack(tx, item.id);
  } else if (mine) {
    await tx
      .deleteFrom('annotation_assignments')
      .where('item_id', '=', item.id)
      .where('reviewer', '=', reviewer)
      .execute();
  }
  if (!(await takePlace(tx, item.id))) {
    const reason = item.state === 'open' ? 'claimed' : item.state;
    throw new ApiError(
      'conflict',
      reason === 'claimed'
        ? `Item ${item.id} is claimed by someone else`
        : `Item ${item.id} is ${item.state}: it takes no more reviews`,
      { item: item.id, reason },
    );
  }
  await tx
    .insertInto('annotation_assignments')
    .values({
      item_id: item.id,
      reviewer,
      queue_id: item.queue_id,
      state: 'reviewed',
      expires_at: null,
      updated_at: nowIso(),
    })
    .execute();
}

async function markReviewed(tx: Db, itemId: string, reviewer: string): Promise<void> {
  await tx
    .updateTable('annotation_assignments')
    .set({ state: 'reviewed', expires_at: null, updated_at: nowIso() })
    .where('item_id', '=', itemId)
    .where('reviewer', '=', reviewer)
    .execute();
}

/**
 * Ends the reviewer's live claim without a review, its place given back: skipped (never offered to them
 * again, and no review of theirs taken), or flagged with a reason (the item leaves the queue; recorded as
 * a flag, not a skip).
 */
export async function skipItem(
  db: Db,
  item: ItemRow,
  reviewer: string,
  flag: string | null = null,
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const r = await tx
      .updateTable('annotation_assignments')
      .set({ state: flag === null ? 'skipped' : 'flagged', expires_at: null, updated_at: nowIso() })
      .where('item_id', '=', item.id)
      .where('reviewer', '=', reviewer)
      .where('state', '=', 'claimed')
      .where('expires_at', '>', Date.now())
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) {
      throw new ApiError('conflict', `You hold no claim on item ${item.id}; claim it first`, {
        item: item.id,
        reason: 'not_claimed',
      });
    }
    await giveBack(tx, item.id);
    if (flag !== null) {
      await tx
        .updateTable('annotation_items')
        .set({ state: 'flagged', flag, updated_at: nowIso() })
        .where('id', '=', item.id)
        .where('state', '=', 'open')
        .execute();
    }
  });
}
