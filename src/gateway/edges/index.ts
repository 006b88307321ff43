import type { RouteDialect } from '../../http/request-types.js';
import type { WireProtocol } from '../../shared/wire-protocol.js';
import { MESSAGES_EDGE } from './anthropic.js';
import { OPENAI_EDGE } from './openai.js';

/** Each dialect's edge (its error body and credential header), as its routes name it in `config.dialect`. */
export const ROUTE_DIALECTS: Record<WireProtocol, RouteDialect> = {
  chat: OPENAI_EDGE,
  responses: OPENAI_EDGE,
  embeddings: OPENAI_EDGE,
  messages: MESSAGES_EDGE,
};
