"""B3_magicoder: Kimi K2.5 coding turns, written for this project (Magicoder-style tasks).

Each sample is composed deterministically from the hand-written pieces below: a task, a long
reasoning made of several paragraphs, and content with code blocks (tabs, runs of spaces,
aligned comments, CJK comments), diffs and JSON.
"""

from __future__ import annotations

import random

from .kimi_turn import KimiIds, Turn

TASKS = [
    ("python", "Write a function `chunked(seq, n)` that yields lists of at most n items.", "chunked"),
    ("python", "Implement an LRU cache class with get/put in O(1).", "LRUCache"),
    ("go", "Write a Go function that reads a file line by line and counts words.", "CountWords"),
    ("rust", "Parse `key=value` pairs from a string into a HashMap in Rust.", "parse_pairs"),
    ("javascript", "Debounce a function in JavaScript without lodash.", "debounce"),
    ("python", "Fix my binary search; it loops forever on two elements.", "binary_search"),
    ("c", "Write a C function that reverses a singly linked list in place.", "reverse_list"),
    ("makefile", "Write a Makefile with build, test and clean targets for a small C project.", "Makefile"),
    ("sql", "Write a query for the top 3 products per category by revenue.", "top_products"),
    ("typescript", "Type a generic `groupBy` in TypeScript.", "groupBy"),
    ("python", "Validate a JSON config against required keys and report every problem.", "validate_config"),
    ("bash", "A bash script that backs up a directory with a timestamped tarball.", "backup.sh"),
    ("python", "把一个嵌套列表展平（flatten），要求支持任意深度。", "flatten"),
    ("go", "Implement a worker pool in Go that processes jobs from a channel.", "WorkerPool"),
    ("python", "Tokenize a string into words and numbers with a regex, keeping offsets.", "tokenize"),
    ("diff", "Review this patch and fix the off-by-one in the pagination.", "paginate"),
    ("json", "Write a JSON schema for a user record and an example document.", "user.schema.json"),
    ("python", "日本語のテキストから全角数字を半角に変換する関数を書いてください。", "to_halfwidth"),
    ("python", "Parse Kimi output: split the text at the end-of-thinking marker and list the tool calls.", "split_kimi"),
    ("yaml", "Write a GitHub Actions workflow that runs pytest on Python 3.11 and 3.12.", "ci.yml"),
    ("python", "Write an async function that fetches URLs with at most 8 requests in flight.", "fetch_all"),
    ("rust", "Implement Display for a 2D point struct in Rust, printing (x, y) with 2 decimals.", "Point"),
    ("diff", "Apply this review comment: use a context manager instead of open/close.", "read_config"),
    ("c", "Count set bits in a 32-bit integer in C, portable, no builtins.", "popcount"),
    ("python", "Write a dataclass for a 3-column text table and a method that pads columns with spaces.", "Table"),
    ("go", "Write a table-driven Go test for a function Abs(int) int.", "TestAbs"),
]

CODE = {
    "chunked": '''```python
def chunked(seq, n):
    """Yield lists of at most n items from seq."""
    if n < 1:
        raise ValueError("n must be >= 1")
    chunk = []
    for item in seq:
        chunk.append(item)
        if len(chunk) == n:
            yield chunk
            chunk = []
    if chunk:                  # the last, shorter chunk
        yield chunk
```''',
    "LRUCache": '''```python
from collections import OrderedDict


class LRUCache:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._data: OrderedDict[int, int] = OrderedDict()

    def get(self, key: int) -> int:
        if key not in self._data:
            return -1
        self._data.move_to_end(key)          # 最近使用
        return self._data[key]

    def put(self, key: int, value: int) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.capacity:
            self._data.popitem(last=False)   # 淘汰最久未使用的
```''',
    "CountWords": '''```go
package main

import (
\t"bufio"
\t"fmt"
\t"os"
\t"strings"
)

// CountWords returns the number of words in the file at path.
func CountWords(path string) (int, error) {
\tf, err := os.Open(path)
\tif err != nil {
\t\treturn 0, err
\t}
\tdefer f.Close()

\tcount := 0
\tscanner := bufio.NewScanner(f)
\tfor scanner.Scan() {
\t\tcount += len(strings.Fields(scanner.Text()))
\t}
\treturn count, scanner.Err()
}

func main() {
\tn, err := CountWords(os.Args[1])
\tif err != nil {
\t\tfmt.Fprintln(os.Stderr, err)
\t\tos.Exit(1)
\t}
\tfmt.Println(n)
}
```''',
    "parse_pairs": '''```rust
use std::collections::HashMap;

/// Parse `a=1; b = 2 ;c=3` into a map. Empty pieces are skipped.
fn parse_pairs(input: &str) -> Result<HashMap<String, String>, String> {
    let mut map = HashMap::new();
    for (i, piece) in input.split(';').enumerate() {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let (k, v) = piece
            .split_once('=')
            .ok_or_else(|| format!("piece {i}: missing '=' in {piece:?}"))?;
        map.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(map)
}
```''',
    "debounce": '''```javascript
function debounce(fn, wait = 200) {
  let timer = null;
  return function debounced(...args) {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      fn.apply(this, args);
    }, wait);
  };
}

// usage
const onResize = debounce(() => console.log(window.innerWidth), 150);
window.addEventListener("resize", onResize);
```''',
    "binary_search": '''```python
def binary_search(xs, target):
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        if xs[mid] < target:
            lo = mid + 1      # was: lo = mid  -> never moves when hi == lo + 1
        else:
            hi = mid - 1
    return -1
```''',
    "reverse_list": '''```c
struct node {
\tint value;
\tstruct node *next;
};

/* Reverse the list in place; returns the new head. */
struct node *reverse_list(struct node *head)
{
\tstruct node *prev = NULL;
\twhile (head) {
\t\tstruct node *next = head->next;
\t\thead->next = prev;
\t\tprev = head;
\t\thead = next;
\t}
\treturn prev;
}
```''',
    "Makefile": '''```makefile
CC      ?= cc
CFLAGS  ?= -O2 -Wall -Wextra -std=c11
SRC     := $(wildcard src/*.c)
OBJ     := $(SRC:.c=.o)

.PHONY: build test clean

build: app

app: $(OBJ)
\t$(CC) $(CFLAGS) -o $@ $^

test: app
\t./tests/run.sh ./app

clean:
\trm -f app $(OBJ)
```''',
    "top_products": '''```sql
WITH revenue AS (
    SELECT p.category,
           p.name,
           SUM(o.quantity * o.unit_price) AS total
    FROM   orders   o
    JOIN   products p ON p.id = o.product_id
    GROUP  BY p.category, p.name
)
SELECT category, name, total
FROM (
    SELECT r.*,
           ROW_NUMBER() OVER (PARTITION BY category ORDER BY total DESC) AS rn
    FROM   revenue r
) ranked
WHERE  rn <= 3
ORDER  BY category, total DESC;
```''',
    "groupBy": '''```typescript
export function groupBy<T, K extends PropertyKey>(
  items: readonly T[],
  key: (item: T) => K,
): Record<K, T[]> {
  const out = {} as Record<K, T[]>;
  for (const item of items) {
    const k = key(item);
    (out[k] ??= []).push(item);
  }
  return out;
}

const byLen = groupBy(["a", "bb", "cc"], (s) => s.length); // { 1: ["a"], 2: ["bb", "cc"] }
```''',
    "validate_config": '''```python
import json

REQUIRED = {"name": str, "port": int, "debug": bool}


def validate_config(text: str) -> list[str]:
    """Every problem in a JSON config, not just the first."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        return [f"line {e.lineno}: not valid JSON: {e.msg}"]
    problems = []
    for key, kind in REQUIRED.items():
        if key not in config:
            problems.append(f"missing key {key!r}")
        elif not isinstance(config[key], kind):
            problems.append(f"{key!r}: expected {kind.__name__}, got {type(config[key]).__name__}")
    return problems
```''',
    "backup.sh": '''```bash
#!/usr/bin/env bash
set -euo pipefail

src=${1:?usage: backup.sh DIR [DEST]}
dest=${2:-$HOME/backups}
stamp=$(date +%Y%m%d-%H%M%S)

mkdir -p "$dest"
tar -czf "$dest/$(basename "$src")-$stamp.tar.gz" -C "$(dirname "$src")" "$(basename "$src")"
echo "wrote $dest/$(basename "$src")-$stamp.tar.gz"
```''',
    "flatten": '''```python
def flatten(items):
    """展平任意深度的嵌套列表（迭代实现，避免递归过深）。"""
    stack = [iter(items)]
    out = []
    while stack:
        try:
            x = next(stack[-1])
        except StopIteration:
            stack.pop()          # 当前层处理完毕
            continue
        if isinstance(x, (list, tuple)):
            stack.append(iter(x))  # 进入下一层
        else:
            out.append(x)
    return out


assert flatten([1, [2, [3, [4]]], 5]) == [1, 2, 3, 4, 5]
```''',
    "WorkerPool": '''```go
func WorkerPool(jobs <-chan Job, workers int) <-chan Result {
\tresults := make(chan Result)
\tvar wg sync.WaitGroup
\tfor i := 0; i < workers; i++ {
\t\twg.Add(1)
\t\tgo func(id int) {
\t\t\tdefer wg.Done()
\t\t\tfor job := range jobs {
\t\t\t\tresults <- process(id, job)
\t\t\t}
\t\t}(i)
\t}
\tgo func() {
\t\twg.Wait()
\t\tclose(results) // 所有 worker 结束后再关闭
\t}()
\treturn results
}
```''',
    "tokenize": '''```python
import re

TOKEN = re.compile(r"(?P<num>\\d+(?:\\.\\d+)?)|(?P<word>[^\\W\\d_]+)", re.UNICODE)


def tokenize(text):
    """[(kind, text, start, end)] for every word and number."""
    return [(m.lastgroup, m.group(), m.start(), m.end()) for m in TOKEN.finditer(text)]


print(tokenize("Größe 42.5 cm, 数量 3"))
# [('word', 'Größe', 0, 5), ('num', '42.5', 6, 10), ('word', 'cm', 11, 13), ('word', '数量', 15, 17), ('num', '3', 18, 19)]
```''',
    "paginate": '''```diff
--- a/app/pagination.py
+++ b/app/pagination.py
@@ -10,9 +10,9 @@ def paginate(items, page, per_page=20):
     if page < 1:
         raise ValueError("page starts at 1")
-    start = page * per_page
-    end = start + per_page + 1
+    start = (page - 1) * per_page
+    end = start + per_page
     return {
         "items": items[start:end],
-        "has_next": end < len(items),
+        "has_next": end < len(items),
         "page": page,
     }
```''',
    "user.schema.json": '''```json
{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "User",
  "type": "object",
  "required": ["id", "name", "email"],
  "properties": {
    "id":       { "type": "string", "pattern": "^u_[0-9]+$" },
    "name":     { "type": "string", "minLength": 1 },
    "email":    { "type": "string", "format": "email" },
    "tags":     { "type": "array", "items": { "type": "string" }, "uniqueItems": true },
    "settings": {
      "type": "object",
      "properties": { "locale": { "type": "string" }, "theme": { "enum": ["light", "dark"] } }
    }
  }
}
```

Example:

```json
{"id": "u_1042", "name": "Zoë Martín", "email": "zoe@example.org", "tags": ["beta", "早期用户"], "settings": {"locale": "es-ES", "theme": "dark"}}
```''',
    "to_halfwidth": '''```python
def to_halfwidth(text: str) -> str:
    """全角数字（０-９）を半角に変換する。他の文字はそのまま。"""
    table = {ord("０") + i: ord("0") + i for i in range(10)}
    return text.translate(table)


assert to_halfwidth("価格は１２３円") == "価格は123円"
```''',
    "split_kimi": '''```python
import re

THINK_END = "</think>"
CALL = re.compile(
    r"<\\|tool_call_begin\\|>\\s*(?P<id>[^<]+?)\\s*<\\|tool_call_argument_begin\\|>(?P<args>.*?)<\\|tool_call_end\\|>",
    re.DOTALL,
)


def split_kimi(text: str):
    """(reasoning, content, [(call id, arguments)]) from decoded Kimi K2.5 output.

    Works on text, so it is only right when the model never writes the marker texts
    as ordinary tokens; for exact ids, work on the ids instead.
    """
    reasoning, _, rest = text.partition(THINK_END)
    first = CALL.search(rest)
    content = rest[: first.start()] if first else rest
    calls = [(m["id"], m["args"]) for m in CALL.finditer(rest)]
    return reasoning, content, calls
```''',
    "ci.yml": '''```yaml
name: tests
on: [push, pull_request]

jobs:
  pytest:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python: ["3.11", "3.12"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python }}
      - run: pip install -e ".[dev]"
      - run: pytest -n 2 -q
```''',
    "fetch_all": '''```python
import asyncio

import httpx


async def fetch_all(urls, limit=8):
    """Fetch every URL, at most `limit` at a time; results keep the input order."""
    sem = asyncio.Semaphore(limit)

    async with httpx.AsyncClient(timeout=10.0) as client:
        async def one(url):
            async with sem:
                r = await client.get(url)
                r.raise_for_status()
                return r.text

        return await asyncio.gather(*(one(u) for u in urls))
```''',
    "Point": '''```rust
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({:.2}, {:.2})", self.x, self.y)
    }
}

fn main() {
    let p = Point { x: 1.0, y: -2.345 };
    println!("{p}"); // (1.00, -2.35)
}
```''',
    "read_config": '''```diff
--- a/settings.py
+++ b/settings.py
@@ -1,8 +1,7 @@
 import json
 
 def read_config(path):
-    f = open(path, encoding="utf-8")
-    data = json.load(f)
-    f.close()
-    return data
+    with open(path, encoding="utf-8") as f:
+        return json.load(f)
```''',
    "popcount": '''```c
#include <stdint.h>

/* Number of 1 bits in x (SWAR: sum bits in pairs, nibbles, bytes). */
unsigned popcount32(uint32_t x)
{
\tx = x - ((x >> 1) & 0x55555555u);
\tx = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
\tx = (x + (x >> 4)) & 0x0F0F0F0Fu;
\treturn (x * 0x01010101u) >> 24;
}
```''',
    "Table": '''```python
from dataclasses import dataclass, field


@dataclass
class Table:
    header: tuple[str, str, str]
    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def render(self) -> str:
        cols = list(zip(self.header, *self.rows))
        widths = [max(len(cell) for cell in col) for col in cols]
        lines = [self.header, *self.rows]
        return "\\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines)


print(Table(("name", "qty", "price"), [("apple", "3", "0.50"), ("watermelon", "1", "4.20")]).render())
# name        qty  price
# apple       3    0.50
# watermelon  1    4.20
```''',
    "TestAbs": '''```go
func TestAbs(t *testing.T) {
\ttests := []struct {
\t\tname string
\t\tin   int
\t\twant int
\t}{
\t\t{"zero", 0, 0},
\t\t{"positive", 7, 7},
\t\t{"negative", -7, 7},
\t\t{"min+1", math.MinInt + 1, math.MaxInt},
\t}
\tfor _, tt := range tests {
\t\tt.Run(tt.name, func(t *testing.T) {
\t\t\tif got := Abs(tt.in); got != tt.want {
\t\t\t\tt.Errorf("Abs(%d) = %d, want %d", tt.in, got, tt.want)
\t\t\t}
\t\t})
\t}
}
```''',
}

REASONING_PARAGRAPHS = [
    "Let me think about what the user actually needs here. The request is about {name}, and the obvious version works "
    "for the happy path, but the edge cases are where bugs live: empty input, one element, and inputs that are much "
    "larger than expected.",
    "First, the interface. {name} should take plain values and return plain values, no hidden global state. If it "
    "fails, it should fail loudly with a message that says what was wrong, not return None and let the caller guess.",
    "Complexity: a single pass is O(n) time. Memory should stay O(1) extra if possible, or O(n) only where the output "
    "itself is that big. Let me not sort anything unless I need to, since that would make it O(n log n).",
    "Hmm, wait. What about very deep nesting or very long lines? Recursion in Python has a default limit around 1000 "
    "frames, so an iterative approach is safer. For the {lang} version I should check what the idiomatic style is.",
    "Let me trace through a small example by hand:\n\n- input of length 0 → nothing happens, return early\n- length 1 → "
    "one step\n- length 2 → this is where off-by-one errors show up, so check `lo`, `hi` and `mid` carefully\n\nOK "
    "that looks right.",
    "我再确认一下边界条件：空输入、单个元素、以及包含 Unicode 字符的输入。这些情况都需要测试。",
    "Naming matters too. `{name}` is fine; helper variables should say what they hold (`start`, `end`, `chunk`), "
    "not `tmp` or `x2`.",
    "Error handling: should invalid input raise, or be skipped? The user didn't say. Raising with a clear message is "
    "the safer default; I'll mention the alternative in the answer.",
    "Testing: I'll add a couple of assertions right under the code so the user can see the expected behaviour, plus "
    "one case that used to fail.",
    "Let me double-check the formatting of the code block: indentation must be consistent (tabs for Go and Makefiles, "
    "4 spaces for Python), otherwise the snippet won't even compile or `make` will complain about a missing separator.",
    "Actually, one more thing: the {lang} standard library might already have something for this. Using it would be "
    "shorter, but the user asked to see the implementation, so I'll write it out and mention the library option.",
    "コメントは日本語で書いたほうがユーザーに親切かもしれない。コードの識別子は英語のままにする。",
    "Performance sanity check with rough numbers: 10^6 items × a few operations each is well under a second in "
    "{lang}. No need for anything clever.",
    "Should I handle `None`/`null` explicitly? In {lang} that's a common source of crashes. I'll guard the entry "
    "point and keep the inner loop clean.",
    "Thinking about concurrency: nothing here is shared between threads, so no locks are needed. If the user later "
    "calls it from several goroutines or threads, the function stays safe because it only touches its own locals.",
    "Let me write the final answer: a short explanation, the code, then a note on complexity and one on what I "
    "changed compared to the user's version (if they gave one).",
    "What does the caller do with the result? If it is streamed to disk, a generator is better than a list; if it "
    "is indexed, a list. For {name} the caller probably iterates once, but returning a list is easier to test.",
    "Let me reconsider the input format. The user wrote the example by hand, so there may be stray spaces, tabs "
    "mixed with spaces, or a trailing newline. Trimming each piece is cheap and avoids a whole class of bug reports.",
    "Version check: the syntax I want needs a reasonably recent {lang}. Nothing exotic, but I should avoid features "
    "that landed in the last release in case the user is on an LTS toolchain.",
    "Edge case: what if the same key appears twice? Last one wins is the usual convention (it matches how a dict "
    "literal behaves); I'll say so in a comment so nobody has to guess.",
    "I keep going back and forth on naming the helper. `normalize` is vague; `strip_and_lower` says exactly what it "
    "does. Explicit wins.",
    "考虑一下性能：如果输入有一百万行，逐行处理的内存占用是常数级的，不需要一次性读入内存。",
    "One subtle thing: integer overflow. In {lang}, adding two large values can wrap around silently (or panic in "
    "debug builds for Rust). The inputs here are small, but I'll note the assumption.",
    "Wait, I should double check the boundary once more. With `range(0, n, k)` the last start is the largest "
    "multiple of k below n, so the final slice may be shorter than k, and that's exactly the behaviour we want.",
    "Unicode: the user's data contains accented letters and CJK text (e.g. `Größe`, `数量`). Anything that uses byte "
    "offsets instead of character offsets will be off; Python strings index by code point, which is what we want.",
    "Is there a way to make this testable without touching the network or the file system? Passing the reader in "
    "as a parameter (dependency injection, but boring) keeps the core pure.",
    "For the explanation I'll use a short numbered list rather than a wall of text: what it does, why it's correct, "
    "what it costs.",
    "ちなみに、エラーメッセージは具体的であるべきだ。「不正な入力」ではなく、どの行のどのフィールドが悪いのかを示す。",
    "Let me think about what the tests should be. The happy path, the empty input, one malformed line in the middle "
    "(which must not stop the rest), and a very long input to catch anything quadratic.",
    "Formatting: I'll align the inline comments with spaces so the code reads like a table; editors that show tabs "
    "as 8 columns won't break it because the code itself uses spaces for Python.",
]

INTROS = [
    "Here's a version that handles the edge cases:\n\n",
    "Sure! Here's an implementation:\n\n",
    "The bug is an off-by-one; here is the fixed code:\n\n",
    "",
    "下面是实现：\n\n",
    "Voici une solution :\n\n",
    "\n\nHere you go:\n\n",
]
OUTROS = [
    "\n\n**Complexity:** O(n) time, O(1) extra space.",
    "\n\nKey points:\n\n1. Empty input returns early.\n2. Errors name what was wrong.\n3. No global state.",
    "\n\n| case        | result   |\n|-------------|----------|\n| empty       | `[]`     |\n| one item    | `[x]`    |\n| big input   | streams  |",
    "",
    "\n\n注意：输入为空时直接返回。",
    "\n\nLet me know if you want a version with tests. 🙂",
    "\n\nRun it with:\n\n```\n$ python3 -m doctest -v solution.py\n```",
]
SYSTEMS = [None, None, "You are a senior engineer. Be precise.", "You are Kimi, an AI assistant created by Moonshot AI.",
           "Answer with code first, explanation after."]


def build(kimi: KimiIds, seed: int = 20261130, count: int = 112) -> list[dict]:
    rng = random.Random(seed)
    samples = []
    for n in range(count):
        lang, task, name = TASKS[n % len(TASKS)]
        k = rng.choice([2, 3, 4, 6, 8, 12, 16, 24])  # some reasoning is long
        paragraphs = [p.format(name=name, lang=lang) for p in rng.sample(REASONING_PARAGRAPHS, k=k)]
        reasoning = "\n\n".join(paragraphs)
        if rng.random() < 0.25:
            reasoning += "\n"  # trailing newline before </think>
        content = rng.choice(INTROS) + CODE[name] + rng.choice(OUTROS)
        messages = [{"role": "user", "content": task}]
        system = rng.choice(SYSTEMS)
        if system:
            messages.insert(0, {"role": "system", "content": system})
        if rng.random() < 0.2:  # a follow-up in an ongoing conversation
            messages = messages + [
                {"role": "assistant", "content": "Do you want it with type hints and tests?"},
                {"role": "user", "content": rng.choice(["Yes, both please.", "Just the code.", "はい、お願いします。"])},
            ]
        samples.append({"id": f"b3-{n:04d}", "messages": messages, "turn": Turn(reasoning=reasoning, content=content)})
    return samples
