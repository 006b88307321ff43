import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../../http/schemas.js';

export const LABEL_PATTERN = '^(?!ctr_)[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';

const Label = Type.String({
  pattern: LABEL_PATTERN,
  description:
    'Unique in the project; letters, digits, . _ : -, up to 128 characters, not starting with ctr_',
});

const SESSION_CONTINUITY =
  'Whether calls without a session header, conversation or trace join sessions by conversation continuity (default true)';

export const Container = Type.Object({
  object: Type.Literal('container'),
  id: Type.String(),
  project_id: Type.String(),
  label: Type.String(),
  description: Nullable(Type.String()),
  metadata: FreeObject(),
  created_at: Type.String(),
  updated_at: Type.String(),
  session_continuity: Type.Boolean({ description: SESSION_CONTINUITY }),
});
export type Container = Static<typeof Container>;

export const CreateContainer = Type.Object(
  {
    label: Label,
    description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    metadata: Type.Optional(Nullable(FreeObject())),
    session_continuity: Type.Optional(Type.Boolean({ description: SESSION_CONTINUITY })),
  },
  { additionalProperties: false },
);
export type CreateContainer = Static<typeof CreateContainer>;

export const PatchContainer = Type.Object(
  {
    label: Type.Optional(Label),
    description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    metadata: Type.Optional(Nullable(FreeObject())),
    session_continuity: Type.Optional(Type.Boolean({ description: SESSION_CONTINUITY })),
  },
  { additionalProperties: false },
);
export type PatchContainer = Static<typeof PatchContainer>;

export const ContainerList = ListOf(Container);
export const ListContainersQuery = Type.Object(PageQuery);

export const ContainerRefParam = Type.Object({
  container: Type.String({ minLength: 1, maxLength: 200, description: 'Container id or label' }),
});
export const ContainerIdParam = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 200, description: 'Container id' }),
});
export const ContainerDeleted = Type.Object({
  object: Type.Literal('container'),
  id: Type.String(),
  deleted: Type.Literal(true),
});
