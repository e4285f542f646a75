"""Word-level tokenizer for kino-tiny, written as a Hugging Face `tokenizers` tokenizer.json:
  normalizer     Lowercase
  pre_tokenizer  Whitespace   (regex \\w+|[^\\w\\s]+ : words and runs of punctuation)
  model          WordLevel, unk_token "[unk]"; ids: [pad]=0, [eos]=1, [unk]=2, then the vocabulary
  post_processor TemplateProcessing: "$A [eos]" (EOS appended)
Truncation is left to the caller: keep at most text_len-1 word tokens, then [eos]
(so a prompt never exceeds text_len tokens and always ends with EOS).

encode() below implements exactly that pipeline in Python (what the server's TS code must do).
"""
import json
import os
import re
import sys

SPECIALS = ["[pad]", "[eos]", "[unk]"]
PAD, EOS, UNK = 0, 1, 2
_PRE = re.compile(r"\w+|[^\w\s]+")


def build(words):
    vocab = {t: i for i, t in enumerate(SPECIALS)}
    for w in words:
        w = w.lower()
        if w not in vocab:
            vocab[w] = len(vocab)
    return vocab


def tokenizer_json(vocab):
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in SPECIALS]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[eos]", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[eos]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "[eos]", "type_id": 0}}],
            "special_tokens": {"[eos]": {"id": "[eos]", "ids": [EOS], "tokens": ["[eos]"]}},
        },
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[unk]"},
    }


class Tokenizer:
    def __init__(self, vocab):
        self.vocab = dict(vocab)

    @classmethod
    def from_file(cls, path):
        with open(path) as f:
            return cls(json.load(f)["model"]["vocab"])

    def save(self, path):
        with open(path, "w") as f:
            json.dump(tokenizer_json(self.vocab), f, indent=1)

    def __len__(self):
        return len(self.vocab)

    def encode(self, text, text_len=None):
        """-> list of ids ending with EOS (at most text_len ids)."""
        words = _PRE.findall(text.lower())
        ids = [self.vocab.get(w, UNK) for w in words]
        if text_len is not None:
            ids = ids[:text_len - 1]
        return ids + [EOS]


def default_tokenizer():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
    import captions
    return Tokenizer(build(captions.vocabulary()))


if __name__ == "__main__":
    tok = default_tokenizer()
    out = sys.argv[1] if len(sys.argv) > 1 else "tokenizer.json"
    tok.save(out)
    print(len(tok), "tokens ->", out)
    print(tok.encode("On a blue background, a yellow square BOUNCING! zebra"))
