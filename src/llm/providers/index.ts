import type { ProviderKind } from '../models/types.js';
import { anthropic } from './anthropic.js';
import { gemini } from './gemini.js';
import { openAiCompatible } from './openai-compatible.js';
import type { ProviderAdapter } from './types.js';

/** Every provider kind a model can name, and the adapter that speaks its protocol. */
export const PROVIDERS: Record<ProviderKind, ProviderAdapter> = {
  'openai-compatible': openAiCompatible,
  anthropic,
  gemini,
};
