import type { JsonObject } from '../../shared/json.js';
import type { StreamEncoder } from '../dialect-types.js';
import type { StreamResult } from '../stream-pump.js';

/** The upstream's events as they pass: only the objects naming the answer's id and model are re-labelled. */
export class RelabelEncoder implements StreamEncoder {
  private failed = false;
  constructor(
    private readonly relabelEvent: (event: JsonObject) => JsonObject,
    private readonly errorEvent: (code: string, message: string) => JsonObject,
  ) {}

  start(): string {
    return '';
  }

  chunk(event: JsonObject): string {
    return `event: ${String(event.type ?? 'message')}\ndata: ${JSON.stringify(this.relabelEvent(event))}\n\n`;
  }

  error(code: string, message: string): string {
    this.failed = true;
    return `event: error\ndata: ${JSON.stringify(this.errorEvent(code, message))}\n\n`;
  }

  end(result: StreamResult): string {
    return result.error && !this.failed ? this.error(result.error.code, result.error.message) : '';
  }
}
