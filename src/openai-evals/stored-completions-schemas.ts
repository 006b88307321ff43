import { Type } from 'typebox';
import { Nullable } from '../http/schemas.js';

/* The stored chat completions API in the shapes of the `openai` package (chat/completions/*.d.ts). */

const Open = { additionalProperties: true } as const;

const Metadata = Type.Record(Type.String(), Type.String(), {
  description: 'Up to 16 pairs; keys up to 64 characters, values up to 512',
});

const AssistantMessage = Type.Object(
  {
    role: Type.String(),
    content: Nullable(Type.String()),
    refusal: Nullable(Type.String()),
    tool_calls: Type.Optional(Type.Array(Type.Object({}, Open))),
  },
  Open,
);

const Choice = Type.Object(
  {
    index: Type.Integer(),
    message: AssistantMessage,
    finish_reason: Nullable(Type.String()),
    logprobs: Nullable(Type.Object({}, Open)),
  },
  Open,
);

const Usage = Type.Object(
  {
    prompt_tokens: Type.Integer({ minimum: 0 }),
    completion_tokens: Type.Integer({ minimum: 0 }),
    total_tokens: Type.Integer({ minimum: 0 }),
  },
  Open,
);

/** A stored chat completion: the completion as answered, its `metadata` as updated. */
export const StoredChatCompletion = Type.Object(
  {
    id: Type.String({ description: 'chatcmpl-…, as answered at creation' }),
    object: Type.Literal('chat.completion'),
    created: Type.Integer({ description: 'Unix seconds' }),
    model: Type.String(),
    choices: Type.Array(Choice),
    usage: Type.Optional(Usage),
    service_tier: Nullable(Type.String()),
    system_fingerprint: Type.Optional(Type.String()),
    moderation: Type.Null(),
    metadata: Metadata,
  },
  Open,
);

const listOf = <T extends ReturnType<typeof Type.Object>>(item: T) =>
  Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    first_id: Nullable(Type.String()),
    last_id: Nullable(Type.String()),
    has_more: Type.Boolean(),
  });

export const StoredChatCompletionList = listOf(StoredChatCompletion);

/** A message of a stored completion's request (`ChatCompletionStoreMessage`). */
export const StoredMessage = Type.Object(
  {
    id: Type.String({ description: '<completion id>-<index>' }),
    role: Type.String(),
    content: Nullable(Type.String({ description: 'The text (text parts joined when content was a list)' })),
    content_parts: Nullable(Type.Array(Type.Object({}, Open))),
    refusal: Nullable(Type.String()),
  },
  Open,
);

export const StoredMessageList = listOf(StoredMessage);

export const StoredCompletionDeleted = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion.deleted'),
  deleted: Type.Boolean(),
});

export const CompletionIdParam = Type.Object({
  completion_id: Type.String({ minLength: 1, maxLength: 200 }),
});

const Cursor = {
  after: Type.Optional(Type.String({ description: 'The id to list after (the last of the previous page)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  order: Type.Optional(Type.Enum(['asc', 'desc'], { default: 'asc' })),
};

export const ListStoredQuery = Type.Object(
  {
    ...Cursor,
    model: Type.Optional(Type.String({ description: 'Only completions of this model' })),
  },
  {
    additionalProperties: Type.String(),
    description: 'metadata[key]=value pairs filter by metadata (every pair must match)',
  },
);

export const ListMessagesQuery = Type.Object(Cursor);

export const UpdateStoredBody = Type.Object(
  { metadata: Nullable(Metadata) },
  { additionalProperties: false, description: "Replaces the completion's metadata (null clears it)" },
);
