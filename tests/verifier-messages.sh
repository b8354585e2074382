#!/usr/bin/env bash
# Every message of the tile IR verifier (tileir/verify.c's fail() calls) is
# expected by at least one test under tests/: a golden's CHECK line or a C
# test's string. A message's printf conversions (%s, %d) match anything;
# a C string split over adjacent literals is read joined; the message's
# first words are enough when they are 30 characters long. Lists the
# messages no test expects and fails if there are any.
#   tests/verifier-messages.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: verifier-messages.sh SOURCE_DIR}
command -v python3 >/dev/null || { echo "verifier-messages.sh needs python3" >&2; exit 1; }
exec python3 - "$src" <<'PY'
import os, re, sys

src = sys.argv[1]
text = open(os.path.join(src, "tileir/verify.c")).read()
text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
lit = r'"(?:[^"\\]|\\.)*"'

def call_args(s, start):
    """The text between fail('s parentheses, from the '(' at start."""
    depth, i, in_str = 0, start, False
    while i < len(s):
        c = s[i]
        if in_str:
            if c == "\\": i += 1
            elif c == '"': in_str = False
        elif c == '"': in_str = True
        elif c == "(": depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0: return s[start + 1:i]
        i += 1
    return s[start + 1:]

messages = []
for m in re.finditer(r"\bfail\s*\(", text):
    if text[max(0, m.start() - 12):m.start()].strip().endswith("void"): continue  # the definition
    args = call_args(text, m.end() - 1)
    # adjacent literals are one string; a ternary gives one message per arm
    for group in re.findall(rf"{lit}(?:\s*{lit})*", args):
        msg = "".join(bytes(x[1:-1], "utf-8").decode("unicode_escape") for x in re.findall(lit, group))
        if msg not in messages and msg.strip(): messages.append(msg)

corpus = []
here = os.path.abspath(__file__) if "__file__" in globals() else ""
for root, _, files in os.walk(os.path.join(src, "tests")):
    for f in files:
        if f == "verifier-messages.sh": continue
        p = os.path.join(root, f)
        try: t = open(p, encoding="utf-8", errors="replace").read()
        except OSError: continue
        if f.endswith((".c", ".h")):
            t = re.sub(r'"\s*\n\s*"', "", t)  # "a " "b" split over lines
            t = re.sub(r'"\s+"', "", t)
        corpus.append(t)
corpus = "\n".join(corpus)

conv = r"(%[-+ #0-9.]*(?:ll|l|z)?[sdiuxgfc])"
missing = []
for msg in messages:
    parts = [p for p in re.split(conv, msg) if p]
    while parts and parts[0].startswith("%"): parts.pop(0)  # a leading or trailing conversion says nothing
    while parts and parts[-1].startswith("%"): parts.pop()
    pat = "".join(r"[^\n]*?" if p.startswith("%") else re.escape(p) for p in parts)
    # A test may expect the message's start only (a CHECK line putting
    # {{.*}} for its explanation, a C test's strstr): a start of whole
    # words before any conversion counts when 30 characters long, enough to
    # name one rule, and the expectation ends there.
    lead = re.split(conv, msg)[0]
    starts = [lead[:m.start()] for m in re.finditer(r"[ ,:]", lead) if m.start() >= 30] + [lead]
    ends = r"\s*(?:\"|\{\{|$)"  # where the test's expectation stops: a C string's end, {{, a line's end
    if not (re.search(pat, corpus) or
            any(len(x) >= 30 and x.rstrip() in corpus and re.search(re.escape(x.rstrip()) + ends, corpus, re.M)
                for x in starts)):
        missing.append(msg)

# Messages no test can expect yet, each with the reason (keep this short:
# a message here is one a mutant of its check survives).
untestable = {}
print(f"{len(messages)} verifier messages, {len(messages) - len(missing)} expected by a test")
for msg in missing:
    if msg in untestable: print(f"  not tested: {msg}: {untestable[msg]}")
    else: print(f"  no test expects: {msg}")
stale = [m for m in untestable if m not in missing]
for msg in stale: print(f"  listed as untestable but expected by a test or gone: {msg}")
sys.exit(1 if [m for m in missing if m not in untestable] or stale else 0)
PY
