import { ApiError } from '../shared/errors.js';
import { grants, type Permission } from './permissions.js';

/**
 * The one rule for reading recorded content. Whatever route shows a task log's, a session's or a trace's
 * content (inputs, outputs, messages) needs what reading it directly needs, however it gets there: the
 * trace, session and task-log routes name these permissions, and so do the routes that show the same
 * content second-hand (review items and claims, exports, run samples).
 */
export type ContentKind = 'task_log' | 'session' | 'trace';

export const CONTENT_PERMISSION: Readonly<Record<ContentKind, Permission>> = {
  task_log: 'logs:read',
  session: 'logs:read',
  trace: 'logs:read',
};

const CONTENT_NAME: Readonly<Record<ContentKind, string>> = {
  task_log: "a task log's content",
  session: "a session's content",
  trace: "a trace's content",
};

/** A permission the caller needs, and why (said in the 403). */
export interface Need {
  permission: Permission;
  why: string;
}

/** What showing content of this kind needs; `where` says what shows it ("the item"). */
export function contentNeed(kind: ContentKind, where: string): Need {
  return { permission: CONTENT_PERMISSION[kind], why: `${where} shows ${CONTENT_NAME[kind]}` };
}

/** Throws 403 `permission_denied`, naming the first need the permissions do not cover and why. */
export function requireNeeds(permissions: readonly string[], needs: readonly Need[]): void {
  for (const need of needs) {
    if (!grants(permissions, need.permission)) {
      throw new ApiError(
        'permission_denied',
        `This API key lacks the '${need.permission}' permission (${need.why})`,
        { required: need.permission },
      );
    }
  }
}
