"""Writes test/fixtures/text-similarity.json: (output, reference) pairs with each text_similarity
metric as computed by the reference libraries users compare against.

  python -m venv /tmp/ref && /tmp/ref/bin/pip install rapidfuzz nltk rouge-score
  NLTK_DATA=<dir with corpora/wordnet> /tmp/ref/bin/python scripts/graders/reference_metrics.py \
      > test/fixtures/text-similarity.json

NLTK's METEOR needs WordNet 3.0 under NLTK_DATA/corpora/wordnet (a copy, not a symlink): NLTK's
downloader, or Debian's `wordnet-base` and `wordnet-sense-index` packages (/usr/share/wordnet) plus the
standard `lexnames` file. Tokens for BLEU, GLEU and METEOR are `str.split()`; ROUGE uses rouge-score's
own tokenizer. METEOR is written twice: with WordNet synonyms (`meteor`) and with no synonym stage
(`meteor_no_synonyms`, Evalgate's fallback when no WordNet database is installed).
"""
import json
import random
import sys
import warnings

from nltk.corpus import wordnet
from nltk.translate.bleu_score import sentence_bleu
from nltk.translate.gleu_score import sentence_gleu
from nltk.translate.meteor_score import single_meteor_score
from rapidfuzz import fuzz
from rouge_score import rouge_scorer

warnings.filterwarnings("ignore")

WORDS = (
    "the a an cat cats dog dogs sat sits sitting run running ran quick quickly brown fox jumps jumped "
    "over lazy big large small little house home red green answer answers is was are be paris france "
    "capital of city model models evaluate evaluation score scores good great fine bad poor happy glad "
    "car automobile fast rapid start begin end finish 42 3.14 hello world, world. Hello! it's don't "
    "New York Tokyo café naïve über data-set e-mail JSON {\"a\": 1}"
).split(" ")

SENTENCES = [
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("The capital of France is Paris", "Paris is the capital of France"),
    ("a big house", "a large house"),
    ("", ""),
    ("", "something"),
    ("something", ""),
    ("The quick brown fox jumps over the lazy dog", "The quick brown dog jumps on the log."),
    ("running dogs", "the dog runs"),
    ("42", "42"),
    ("Hello, world!", "hello world"),
]


class NoSynonyms:
    """A WordNet stand-in with no synsets: METEOR's synonym stage then matches nothing."""

    def synsets(self, _word):
        return []


def pairs(count, seed=26):
    rng = random.Random(seed)
    out = list(SENTENCES)
    while len(out) < count:
        ref = [rng.choice(WORDS) for _ in range(rng.randint(1, 18))]
        hyp = list(ref)
        for _ in range(rng.randint(0, 6)):
            op = rng.random()
            if op < 0.3 and hyp:
                hyp[rng.randrange(len(hyp))] = rng.choice(WORDS)
            elif op < 0.5 and hyp:
                del hyp[rng.randrange(len(hyp))]
            elif op < 0.7:
                hyp.insert(rng.randint(0, len(hyp)), rng.choice(WORDS))
            elif op < 0.85 and len(hyp) > 1:
                i, j = rng.randrange(len(hyp)), rng.randrange(len(hyp))
                hyp[i], hyp[j] = hyp[j], hyp[i]
            else:
                hyp = [w.upper() if rng.random() < 0.2 else w for w in hyp]
        out.append((" ".join(hyp), " ".join(ref)))
    return out


def main():
    wordnet.ensure_loaded()
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rougeL"])
    rows = []
    for output, reference in pairs(int(sys.argv[1]) if len(sys.argv) > 1 else 240):
        hyp, ref = output.split(), reference.split()
        rouge = scorer.score(reference, output)
        rows.append(
            {
                "output": output,
                "reference": reference,
                "fuzzy_match": fuzz.ratio(output, reference) / 100,
                "bleu": sentence_bleu([ref], hyp) if hyp else 0.0,
                "gleu": sentence_gleu([ref], hyp),
                "meteor": single_meteor_score(ref, hyp),
                "meteor_no_synonyms": single_meteor_score(ref, hyp, wordnet=NoSynonyms()),
                **{f"rouge_{n}": rouge[f"rouge{n}"].fmeasure for n in range(1, 6)},
                "rouge_l": rouge["rougeL"].fmeasure,
            }
        )
    json.dump({"generated_by": "scripts/graders/reference_metrics.py", "pairs": rows}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
