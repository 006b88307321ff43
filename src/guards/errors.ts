import { ApiError } from '../shared/errors.js';

/*
 * The guards' domain errors. They are ApiErrors (the service's one error type), so that the edge renders
 * each in the envelope of its route's dialect; a blocked call is `content_filter` (400): OpenAI's SDKs
 * raise BadRequestError with that code, Anthropic's a BadRequestError of type invalid_request_error.
 */

/** A call a guard blocked: names the policy, the check and why. */
export class GuardBlockedError extends ApiError {
  override name = 'GuardBlockedError';
  constructor(
    readonly guard: string,
    readonly policyId: string,
    readonly stage: string,
    readonly reason: string,
  ) {
    super('content_filter', `Blocked by guard '${guard}' (${stage}): ${reason}`, {
      guard,
      policy_id: policyId,
      stage,
      reason,
    });
  }
}

export const policyNotFound = (ref: string) => ApiError.notFound('Guard policy', ref);

export const policyNameTaken = (name: string) =>
  new ApiError('conflict', `A guard policy named '${name}' already exists in this project`, { name });
