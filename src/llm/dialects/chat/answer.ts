import { isObject, type JsonObject } from '../../../shared/json.js';
import type { DialectAnswer, StreamEncoder } from '../../dialect-types.js';
import type { ChatCompletion } from '../../providers/types.js';
import type { StreamResult } from '../../stream-pump.js';

/*
 * A chat completion created with `store: true` is a task log found again by its id: the gateway answers
 * it as `chatcmpl-X` for the log `log_X` (in the body and in every streamed chunk), so the id the client
 * got is the one `GET /v1/chat/completions/{id}` takes.
 */

export function completionIdOf(logId: string): string {
  return `chatcmpl-${logId.slice(4)}`;
}

/** The task log id of a stored completion's id, or null when the id is not one the gateway gives. */
export function logIdOfCompletion(completionId: string): string | null {
  return /^chatcmpl-[A-Za-z0-9]{1,100}$/.test(completionId) ? `log_${completionId.slice(9)}` : null;
}

const frame = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;

/** Chat completion chunks passed on with the stored completion's id. */
class RelabelledChunks implements StreamEncoder {
  constructor(private readonly id: string) {}
  start(): string {
    return '';
  }
  chunk(chunk: JsonObject): string {
    return frame({ ...chunk, id: this.id });
  }
  error(code: string, message: string): string {
    return frame({ error: { code, message } });
  }
  end(result: StreamResult): string {
    // A stream that failed ends with its error event, as the untranslated chat stream does.
    return result.error ? '' : 'data: [DONE]\n\n';
  }
}

/** The chat answer of a stored completion: the upstream's completion under the id `chatcmpl-X`. */
export function storedChatAnswer(logId: string): DialectAnswer {
  const id = completionIdOf(logId);
  return {
    plain: (completion: ChatCompletion) =>
      JSON.stringify(isObject(completion) ? { ...completion, id } : completion),
    stream: () => new RelabelledChunks(id),
  };
}
