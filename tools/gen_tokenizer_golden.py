#!/usr/bin/env python3
"""Builds the tokenizer parity corpus and, where the `tokenizers` package is
installed, the Hugging Face golden ids for it.

  gen_tokenizer_golden.py --out DIR                      # corpus.jsonl only
  gen_tokenizer_golden.py --out DIR --tokenizer-dir TOK  # + golden files

Golden files (written only with --tokenizer-dir):
  golden.jsonl         ids and decodes for every corpus string (below)
  golden_decode.jsonl  decode of random id sequences, many of them cutting
                       UTF-8 characters apart: {"ids", "decode", "decode_skip"}
  unicode_split.txt    for every code point c, the byte lengths of the words
                       HF's pre-tokenizer cuts split_probe(c) into, run-length
                       coded as "FIRST LAST len,len,..." (hex code points)
  unicode_nfc.txt      "CP NFC..." (hex) for every code point that HF's
                       normalizer changes
  small/               a 1000-token BPE trained here with HF's trainer and
                       Qwen's normalizer/pre-tokenizer/decoder config, plus
                       added tokens of every kind (tokenizer.json,
                       tokenizer_config.json) and its golden.jsonl (rows carry
                       their own "text"): vocab-size generality

The corpus is built deterministically (no randomness outside a fixed-seed
generator that uses only random.random()), so running this on two machines
gives byte-identical corpus.jsonl files; the golden run checks that too.

corpus.jsonl: one {"text": ...} per line.
golden.jsonl: first line a header, then one object per corpus line:
  ids              HF encode(text, add_special_tokens=False), specials parsed
  ids_nospecial    same with encode_special_tokens=True, or null if equal to ids
  decode           HF decode(ids, skip_special_tokens=False), or null if == text
  decode_skip      HF decode(ids, skip_special_tokens=True), or null if == decode
  nfc              HF normalizer output, or null if == text
"""
import argparse
import hashlib
import json
import os
import random
import sys

SEED = 20261121


def code_samples():
    return [
        'def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n',
        'class Foo(Base):\n\tdef __init__(self, x: int = 0) -> None:\n\t\tself._x = x  # private\n',
        'import numpy as np\narr = np.zeros((3, 4), dtype=np.float32)\nprint(f"{arr.shape=}")\n',
        '#include <vector>\nint main() {\n  std::vector<int> v{1, 2, 3};\n  for (auto& x : v) x *= 2;\n  return 0;\n}\n',
        'template <typename T>\nconstexpr T clamp(T v, T lo, T hi) noexcept { return v < lo ? lo : (hi < v ? hi : v); }',
        'fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!("{:?}", v);\n}\n',
        'impl<\'a> Iterator for Words<\'a> {\n    type Item = &\'a str;\n    fn next(&mut self) -> Option<Self::Item> { None }\n}',
        'const add = (a, b) => a + b;\nconsole.log(`sum: ${add(2, 3)}`);\n// TODO: handle NaN\n',
        'async function load(url) {\n  const res = await fetch(url, { method: "GET" });\n  if (!res.ok) throw new Error(res.statusText);\n  return res.json();\n}',
        'package main\n\nimport "fmt"\n\nfunc main() {\n\tch := make(chan int, 4)\n\tgo func() { ch <- 42 }()\n\tfmt.Println(<-ch)\n}\n',
        'public class Hello {\n    public static void main(String[] args) {\n        System.out.println("Hello, World!");\n    }\n}\n',
        'SELECT u.id, COUNT(*) AS n\nFROM users u\nJOIN orders o ON o.user_id = u.id\nWHERE o.created_at >= \'2024-01-01\'\nGROUP BY u.id\nHAVING n > 10;\n',
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Test</title></head>\n<body><p class="x">Hi &amp; bye</p></body>\n</html>\n',
        '#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n  wc -l "$f" | awk \'{print $1}\' >> out.log\ndone\n',
        '{\n    "name": "flashdraft",\n    "version": "0.1.0",\n    "deps": ["pcre2", "utf8proc"],\n    "nested": {"a": [1, 2.5, -3e10, null, true]}\n}',
        'x = {k: v for k, v in zip(keys, values) if v is not None}\ny = [i ** 2 for i in range(100) if i % 3 == 0]\n',
        'if (x != y && (a <= b || c >= d)) { z ^= 0xFF; w <<= 2; q = !p; }',
        '    \n\t\t\n        return;\n    }\n}\n\n\n',
        'fn  spaced   (  a :  i32  )   ->   i32   {   a   }',
        '# Title\n\n- item one\n- item two\n  - nested *emphasis* and **bold**\n\n```python\nprint("code")\n```\n',
        'diff --git a/x.c b/x.c\n@@ -1,3 +1,4 @@\n-int a = 1;\n+int a = 2;\n+int b = 3;\n',
        'main :: IO ()\nmain = mapM_ print [x | x <- [1..10], even x]\n',
        '(defun square (x) (* x x))\n(mapcar #\'square \'(1 2 3))',
        'my %h = (a => 1, b => 2);\nwhile (my ($k, $v) = each %h) { print "$k=$v\\n"; }',
        'local t = {1, 2, 3}\nfor i, v in ipairs(t) do print(i, v) end',
        '\\documentclass{article}\n\\begin{document}\n$E = mc^2$ and $\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$\n\\end{document}',
        'regex: ^(?:[a-z0-9!#$%&\'*+/=?^_`{|}~-]+)@(?:[a-z0-9-]+\\.)+[a-z]{2,}$',
        'C:\\Users\\Admin\\AppData\\Local\\Temp\\file_001.tmp',
        'https://example.com/path/to/page?query=a%20b&x=1#frag',
        'user@example.org, admin+tag@sub.domain.co.uk',
    ]


def cjk_samples():
    return [
        '你好，世界！今天天气很好。',
        '人工智能正在改变我们的生活方式，尤其是在医疗、教育和交通领域。',
        '我喜欢用Python写代码，也喜欢C++。',
        '日本語のテキスト：こんにちは、世界。カタカナとひらがなと漢字。',
        '東京都は日本の首都であり、人口は約1400万人です。',
        'ｶﾀｶﾅ（半角）と全角ＡＢＣ１２３の混在。',
        '한국어 문장입니다. 안녕하세요, 만나서 반갑습니다!',
        '대한민국의 수도는 서울입니다。서울은 큰 도시예요.',
        '繁體中文：臺灣的資訊科技產業非常發達。',
        '中文　全角空格　分隔',
        '「引用」『二重引用』【括弧】〔其他〕……——',
        '数字１２３４５和汉字混合ＡＢＣ',
        '𠀀𠀁𠀂 (CJK Extension B) 𪚥𰻞',
        'この文章は、テストのために書かれました。句読点、記号！？',
        '漢字かな交じり文English mixed 中文 한국어',
    ]


def emoji_samples():
    return [
        'Hello 👋 world 🌍!',
        '😀😃😄😁😆😅🤣😂🙂🙃',
        'Family: 👨‍👩‍👧‍👦 and 👩‍👩‍👦 and 👨‍👨‍👧‍👧',
        'Skin tones: 👍🏻👍🏼👍🏽👍🏾👍🏿',
        'Flags: 🇺🇸🇬🇧🇯🇵🇨🇳🇩🇪🇫🇷',
        'Keycaps: 1️⃣2️⃣3️⃣#️⃣*️⃣',
        'ZWJ professions: 👩‍💻👨‍🔬🧑‍🚀👩‍⚕️',
        'Hearts ❤️ 🧡 💛 💚 💙 💜 🖤 ❤️‍🔥 ❤️‍🩹',
        'Rainbow flag 🏳️‍🌈 pirate 🏴‍☠️',
        '🏴󠁧󠁢󠁳󠁣󠁴󠁿 Scotland tag sequence',
        'text ☺ vs emoji ☺️ variation selectors ✔︎ ✔️',
        '🤖🧠💡🔥✨🎉',
        'emoji🙂without🙂spaces🙂between',
    ]


def combining_samples():
    return [
        'cafe\u0301 vs café',
        'e\u0301e\u0300e\u0302e\u0308',
        'A\u030a vs \u212b (Angstrom sign) vs \u00c5',
        '\u2126 ohm sign vs \u03a9 omega',
        'Ti\u1ebfng Vi\u00ea\u0323t c\u00f3 d\u00e2\u0301u',
        'Tiếng Việt có dấu: Người ta nói rằng',
        '\u1100\u1161\u11a8 decomposed hangul jamo',
        'Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u0334\u0335\u031c\u0330\u0354L\u0336\u0321\u0316\u0339\u031e\u031d\u0323G\u0334O\u0335 zalgo',
        'q\u0307\u0323 ordering of marks: \u0323\u0307 after q',
        'हिन्दी भाषा देवनागरी लिपि में लिखी जाती है।',
        'ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ',
        'ñ vs n\u0303, ü vs u\u0308, ç vs c\u0327',
        '\u0041\u0300\u0301\u0302\u0303\u0304\u0305\u0306',
        'Ελληνικά: άλφα, βήτα, γάμμα; Ἀθῆναι',
        'Русский текст: Съешь же ещё этих мягких французских булок.',
        'fi ligature \ufb01 and ﬀ and ℌ and ① and ²',
        '\u0301 leading combining mark',
        'ﾊﾟ half-width katakana with voiced mark ﾊﾞ',
        'ক্ষ বাংলা যুক্তাক্ষর',
        '\u0915\u093c vs \u0958 (composition exclusion)',
    ]


def rtl_samples():
    return [
        'مرحبا بالعالم! كيف حالك اليوم؟',
        'اللغة العربية جميلة جدا، وفيها حروف كثيرة.',
        'الأرقام: ٠١٢٣٤٥٦٧٨٩ و 0123456789',
        'عربي mixed with English و123',
        'فارسی: می\u200cخواهم بروم (ZWNJ)',
        'עברית: שלום עולם!',
        'بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ',
        'اردو زبان بہت خوبصورت ہے۔',
    ]


def whitespace_samples():
    return [
        ' ', '  ', '\t', '\n', '\r\n', '\n\n\n', ' \n ', '\t\t\t\tindented',
        'a' + ' ' * 100 + 'b',
        ' ' * 1000,
        '\t' * 300 + 'x',
        'line1\r\nline2\r\nline3\r\n',
        'trailing spaces   \nnext line\t \t\n',
        'mixed \t \r\n \n\r spaces',
        '\u00a0nbsp\u00a0here\u00a0\u00a0',
        'em\u2003space and thin\u2009space and ideographic\u3000space',
        'vertical\x0btab and form\x0cfeed',
        'NEL\u0085line and LS\u2028PS\u2029end',
        'mongolian\u180evowel separator',
        'zero\u200bwidth\u200cjoiners\u200d',
        '\n\n\n\n\n\n\n\n\n\n' + 'x' + '\r\n' * 50,
        'end with newline\n',
        '   leading and trailing   ',
        'a \n\n b \n \n c',
        '\r\r\r carriage returns',
        ' \u00a0 \u2003 \u3000 ',
    ]


def number_samples():
    return [
        '0', '1234567890', '3.14159265358979323846',
        '1,000,000.00 and 1.000.000,00',
        '9' * 200,
        'Phone: +1 (555) 123-4567',
        'Year 2024, 12:30:45, 2024-06-01T12:00:00Z',
        '0x1F 0b1010 0o777 1e-10 6.022e23',
        '١٢٣ ١٢٣٤٥ arabic-indic',
        '１２３ fullwidth digits',
        'Ⅰ Ⅱ Ⅻ roman numerals, ½ ¾ fractions, x² y³',
        '①②③ circled',
        '-42 +17 ~3 ±5',
        'IPv4 192.168.0.1 and IPv6 ::1 fe80::1%eth0',
        'v1.2.3-rc.1+build.456',
        '३४५ देवनागरी अंक',
        '12345678901234567890123456789012345678901234567890',
    ]


def contraction_samples():
    return [
        "don't can't won't shouldn't",
        "DON'T CAN'T WON'T SHOULDN'T",
        "I'm you're he's she'll we've they'd",
        "I'M YOU'RE HE'S SHE'LL WE'VE THEY'D",
        "It'S mIxEd'Ll cAsE'Re wE'vE",
        "'s 't 're 've 'm 'll 'd",
        "'S 'T 'RE 'VE 'M 'LL 'D",
        "rock'n'roll o'clock y'all",
        "'tis 'twas ''double'' '''triple'''",
        "long s 'ſ and kelvin 'K and 'ſt",
        "curly apostrophes: don’t it’s ‘quoted’",
        "the dog's bone, the dogs' bones",
        "'12 '99 numbers after apostrophe",
        "L'homme d'affaires aujourd'hui",
        "'Ll'S'D mixed",
        "İstanbul'un İ ı ǅ ǈ title-case letters",
    ]


def special_samples():
    return [
        '<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n',
        '<|endoftext|>',
        'before<|endoftext|>after',
        '<|im_start|><|im_start|><|im_end|><|im_end|>',
        '<|im_start|>system\nYou are helpful.<|im_end|>',
        '<think>\nreasoning here\n</think>\n\nanswer',
        '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
        '<tool_response>ok</tool_response>',
        '<|im_start partial and <|im_end| broken and |im_end|>',
        '<<|im_end|>> nested angle brackets',
        '<|im_end|>\u0301 combining after special',
        '<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>',
        '<|vision_start|><|image_pad|><|vision_end|>',
        'text <|endoftext|>text <|endoftext|> text',
        ' <|im_start|> spaces around <|im_end|> ',
        '<|IM_START|> wrong case is not special',
        '<|object_ref_start|>x<|object_ref_end|><|box_start|>(1,2)<|box_end|>',
        '<|repo_name|>flashdraft<|file_sep|>src/main.cpp',
        '<think></think>',
        '</think><think>',
        '<|im_start|>' * 20,
        'e\u0301<|endoftext|>e\u0301',
    ]


def misc_samples():
    return [
        '',
        'a',
        'Hello, world!',
        'The quick brown fox jumps over the lazy dog.',
        'THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.',
        'Mr. O\'Neil said: "It\'s 5 o\'clock!" -- really?!',
        '...???!!!,,,;;;:::',
        '((( ))) [[[ ]]] {{{ }}} <<< >>>',
        '____init____ and --flag=value and ==> <== !==',
        '\u0000nul\u0000char',
        '\u0001\u0002\u0003\u001b[31mred\u001b[0m',
        '\ufffd replacement char \ufffd',
        '\ue000 private use \uf8ff',
        '\U0010ffff max code point',
        '\U0001d400\U0001d401 math bold',
        'ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖ×ØÙÚÛÜÝÞßàáâãäåæçèéêëìíîïðñòóôõö÷øùúûüýþÿ',
        '\u00ad soft hyphen and \u2011 non-breaking hyphen',
        'Ünïcödé tëxt wïth dïäcrïtïcs',
        'Straße, größer, Maß',
        'a' * 300,
        'ab' * 200,
        'Supercalifragilisticexpialidocious' * 5,
        '---' * 100,
        '=' * 80 + '\n' + '#' * 80,
        '🙂' * 50,
        '中' * 200,
    ]


# Building blocks for the generated strings.
PIECES = [
    'the', 'The', 'THE', ' of', ' and', ' to', "'s", "'LL", "'ve", 'ing', ' ', '  ', '\t', '\n', '\r\n',
    '\n\n', '   ', '0', '7', '42', '2024', '3.14', '1,000', 'x', 'ä', 'é', 'e\u0301', 'n\u0303', 'ß',
    '中', '文', '日本', 'かな', 'カナ', '한', '국', 'ع', 'ربي', 'ש', 'ф', 'Ж', 'α', 'Ω', 'ก', 'क्',
    '😀', '👍🏽', '👨\u200d👩\u200d👧', '🇯🇵', '❤️', '\u200d', '\u00a0', '\u3000', '\u2028',
    '.', ',', '!', '?', ';', ':', '-', '_', '(', ')', '{', '}', '[', ']', '<', '>', '"', "'", '`',
    '/', '\\', '|', '@', '#', '$', '%', '^', '&', '*', '+', '=', '~', '…', '—', '«', '»', '€', '£',
    '<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<|', '|>', '<|im_',
    'def ', 'return ', 'int ', '{}', '();', '=>', '::', '->', '!=', '==', '&&', '||',
]


def random_strings(rng, count, min_pieces, max_pieces):
    out = []
    for _ in range(count):
        n = min_pieces + int(rng.random() * (max_pieces - min_pieces + 1))
        out.append(''.join(PIECES[int(rng.random() * len(PIECES))] for _ in range(n)))
    return out


# Code points from many scripts and categories, for character-level fuzzing.
CODE_POINT_RANGES = [
    (0x20, 0x7e), (0x09, 0x0d), (0xa0, 0x24f), (0x300, 0x36f), (0x370, 0x3ff), (0x400, 0x4ff),
    (0x590, 0x5ff), (0x600, 0x6ff), (0x900, 0x97f), (0xe00, 0xe7f), (0x1100, 0x11ff), (0x1e00, 0x1eff),
    (0x2000, 0x206f), (0x2100, 0x214f), (0x2190, 0x21ff), (0x3000, 0x30ff), (0x4e00, 0x4fff),
    (0xac00, 0xad00), (0xff00, 0xffef), (0x1f300, 0x1f64f), (0x1f900, 0x1f9ff), (0x1d400, 0x1d4ff),
]


def random_code_point_strings(rng, count, max_len):
    out = []
    for _ in range(count):
        n = 1 + int(rng.random() * max_len)
        chars = []
        for _ in range(n):
            lo, hi = CODE_POINT_RANGES[int(rng.random() * len(CODE_POINT_RANGES))]
            cp = lo + int(rng.random() * (hi - lo + 1))
            chars.append(chr(cp))
        out.append(''.join(chars))
    return out


def long_lines(rng):
    """Five ~50 KB lines: prose+code mix, CJK, one huge word, digits, random mix."""
    target = 50 * 1024
    prose = ' '.join(code_samples() + cjk_samples() + emoji_samples() + contraction_samples())
    def fill(text):  # repeat text to just over target bytes, cut at a character
        reps = (text * (target // len(text) + 2))
        out, size = [], 0
        for ch in reps:
            out.append(ch)
            size += len(ch.encode())
            if size >= target:
                break
        return ''.join(out)

    lines = [fill(prose), fill(''.join(cjk_samples()[:5]))]
    lines.append('abcdefghij' * (target // 10))  # one single 50 KB word
    lines.append(''.join(str(int(rng.random() * 10)) for _ in range(target)))
    mixed = []
    size = 0
    while size < target:
        s = PIECES[int(rng.random() * len(PIECES))]
        mixed.append(s)
        size += len(s.encode())
    lines.append(''.join(mixed))
    return lines


def build_corpus():
    rng = random.Random(SEED)
    corpus = []
    for group in (code_samples, cjk_samples, emoji_samples, combining_samples, rtl_samples,
                  whitespace_samples, number_samples, contraction_samples, special_samples, misc_samples):
        corpus.extend(group())
    corpus.extend(random_strings(rng, 90, 1, 12))
    corpus.extend(random_strings(rng, 30, 20, 120))
    corpus.extend(random_code_point_strings(rng, 50, 40))
    corpus.extend(long_lines(rng))
    return corpus


def write_jsonl(path, rows):
    with open(path, 'w', encoding='ascii', newline='\n') as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=True, separators=(',', ':')) + '\n')


def golden_rows(corpus, tokenizer_dir):
    import tokenizers
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(tokenizer_dir, 'tokenizer.json'))
    plain = Tokenizer.from_file(os.path.join(tokenizer_dir, 'tokenizer.json'))
    plain.encode_special_tokens = True  # specials in the text are plain text
    rows = [{'header': True, 'tokenizers_version': tokenizers.__version__, 'count': len(corpus)}]
    for text in corpus:
        ids = tok.encode(text, add_special_tokens=False).ids
        ids_plain = plain.encode(text, add_special_tokens=False).ids
        dec = tok.decode(ids, skip_special_tokens=False)
        dec_skip = tok.decode(ids, skip_special_tokens=True)
        nfc = tok.normalizer.normalize_str(text) if tok.normalizer is not None else text
        rows.append({
            'ids': ids,
            'ids_nospecial': None if ids_plain == ids else ids_plain,
            'decode': None if dec == text else dec,
            'decode_skip': None if dec_skip == dec else dec_skip,
            'nfc': None if nfc == text else nfc,
        })
    return rows


def split_probe(c):
    """Puts c after a letter, a digit, an apostrophe, a space, before letters
    and whitespace: the words it lands in reveal how the split regex classes
    it (letter, number, space, newline, other, contraction letter)."""
    return 'x' + c + "1'" + c + ' ' + c + c + 'x\n' + c + '\t.'


def all_code_points():
    return (cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def write_unicode_tables(tok, out_dir):
    runs = []
    for cp in all_code_points():
        pieces = tok.pre_tokenizer.pre_tokenize_str(split_probe(chr(cp)))
        # ByteLevel has already mapped each byte to one character.
        sig = ','.join(str(len(p)) for p, _ in pieces)
        if runs and runs[-1][2] == sig and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        elif runs and runs[-1][2] == sig and runs[-1][1] == 0xD7FF and cp == 0xE000:
            runs[-1][1] = cp  # the surrogate gap does not break a run
        else:
            runs.append([cp, cp, sig])
    with open(os.path.join(out_dir, 'unicode_split.txt'), 'w', newline='\n') as f:
        for first, last, sig in runs:
            f.write(f'{first:X} {last:X} {sig}\n')
    with open(os.path.join(out_dir, 'unicode_nfc.txt'), 'w', newline='\n') as f:
        for cp in all_code_points():
            nfc = tok.normalizer.normalize_str(chr(cp))
            if nfc != chr(cp):
                f.write(f'{cp:X} ' + ' '.join(f'{ord(ch):X}' for ch in nfc) + '\n')
    print(f'unicode tables: {len(runs)} split runs')


def decode_rows(tok, tok_json_path, count):
    rng = random.Random(SEED + 1)
    vocab = tok.get_vocab(with_added_tokens=True)
    size = max(vocab.values()) + 1
    added = sorted(t['id'] for t in json.load(open(tok_json_path, encoding='utf-8'))['added_tokens'])
    byte_tokens = sorted(i for t, i in vocab.items() if len(t) == 1)
    rows = []
    for _ in range(count):
        ids = []
        for _ in range(1 + int(rng.random() * 12)):
            r = rng.random()
            if r < 0.5:
                ids.append(byte_tokens[int(rng.random() * len(byte_tokens))])
            elif r < 0.9:
                ids.append(int(rng.random() * size))
            else:
                ids.append(added[int(rng.random() * len(added))])
        ids = [i for i in ids if tok.id_to_token(i) is not None]
        rows.append({'ids': ids, 'decode': tok.decode(ids, skip_special_tokens=False),
                     'decode_skip': tok.decode(ids, skip_special_tokens=True)})
    return rows


SMALL_EXTRA_TEXTS = [
    'cafe\u0301 caf\u00e9 <think>x</think> \u4e2d\u6587 <|im_start|>hi<|im_end|>',
    '\u4e2d\u6587\u4e2d\u6587<think><think>',
    'caf\u00e9<|endoftext|>cafe\u0301',
    '<|im_start|>user\nWhat\'s 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>',
]


def train_small(corpus, qwen_tokenizer_dir, out_dir):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    qwen = json.load(open(os.path.join(qwen_tokenizer_dir, 'tokenizer.json'), encoding='utf-8'))
    pattern = qwen['pre_tokenizer']['pretokenizers'][0]['pattern']['Regex']
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior='isolated', invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer=trainer)
    # Non-special added tokens: one matched after normalisation, one whose
    # text lies in the byte alphabet, one outside it.
    tok.add_tokens([AddedToken('<think>', special=False, normalized=False),
                    AddedToken('</think>', special=False, normalized=False),
                    AddedToken('caf\u00e9', special=False, normalized=True),
                    AddedToken('\u4e2d\u6587', special=False, normalized=False)])
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, 'tokenizer.json'))
    with open(os.path.join(out_dir, 'tokenizer_config.json'), 'w', encoding='utf-8') as f:
        json.dump({'add_bos_token': False, 'bos_token': None, 'eos_token': {'content': '<|im_end|>'},
                   'pad_token': '<|endoftext|>', 'chat_template': None}, f, indent=2)

    tok = Tokenizer.from_file(os.path.join(out_dir, 'tokenizer.json'))
    plain = Tokenizer.from_file(os.path.join(out_dir, 'tokenizer.json'))
    plain.encode_special_tokens = True
    texts = [t for t in corpus if len(t.encode()) < 10000] + SMALL_EXTRA_TEXTS
    rows = []
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False).ids
        rows.append({'text': text, 'ids': ids,
                     'ids_nospecial': plain.encode(text, add_special_tokens=False).ids,
                     'decode': tok.decode(ids, skip_special_tokens=False),
                     'decode_skip': tok.decode(ids, skip_special_tokens=True)})
    write_jsonl(os.path.join(out_dir, 'golden.jsonl'), rows)
    print(f'small tokenizer: vocab {tok.get_vocab_size()}, {len(rows)} golden rows')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True, help='directory for corpus.jsonl (and golden.jsonl)')
    ap.add_argument('--tokenizer-dir', help='directory with tokenizer.json; enables golden.jsonl')
    ap.add_argument('--train-small', action='store_true', help='also train and record the small tokenizer')
    ap.add_argument('--skip-qwen', action='store_true', help='skip the Qwen3 golden files')
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    corpus = build_corpus()
    corpus_path = os.path.join(args.out, 'corpus.jsonl')
    write_jsonl(corpus_path, [{'text': t} for t in corpus])
    digest = hashlib.sha256(open(corpus_path, 'rb').read()).hexdigest()
    print(f'{len(corpus)} strings, {sum(len(t.encode()) for t in corpus)} bytes, corpus sha256 {digest}')
    if args.tokenizer_dir and not args.skip_qwen:
        rows = golden_rows(corpus, args.tokenizer_dir)
        rows[0]['corpus_sha256'] = digest
        write_jsonl(os.path.join(args.out, 'golden.jsonl'), rows)
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(args.tokenizer_dir, 'tokenizer.json'))
        write_jsonl(os.path.join(args.out, 'golden_decode.jsonl'), decode_rows(tok, os.path.join(args.tokenizer_dir, 'tokenizer.json'), 300))
        write_unicode_tables(tok, args.out)
        print(f'golden written with tokenizers {rows[0]["tokenizers_version"]}')
    if args.train_small:
        train_small(corpus, args.tokenizer_dir, os.path.join(args.out, 'small'))


if __name__ == '__main__':
    sys.exit(main())
