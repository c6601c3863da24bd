#!/usr/bin/env python3
"""Fails when a file of the repository points at documentation that does not hold what it names.

docs/ is the contract: a comment, a test or a page that names a rule points at the docs page and
section that states it, as `docs/privacy.md "Erasure"` or `docs/api.md, "Receipts"` (with or
without the `docs/` prefix inside docs/, after a Markdown link too), and Markdown links point at
`page.md#anchor`. This check makes those pointers trustworthy:

1. No file cites PRODUCT.md, the older product specification that is not in the repository, or a
   numbered section of it (`§12` that is not an RFC's section).
2. Every `docs/PAGE.md "Section"` names an existing page and one of its headings: the heading's
   text without backticks, or its beginning up to a `:`, ` (`, `,`, ` —` or `.` (so
   `docs/privacy.md "Training capture"` names "Training capture: what is kept and why").
3. Every relative Markdown link `[…](PAGE.md#anchor)` in a Markdown file reaches an existing file
   and, with an anchor, a heading of it (GitHub's anchors: lower case, punctuation dropped,
   spaces as hyphens, `-1`, `-2`… for repeated headings).

Applied migrations are exempt: their checksums are recorded in every database, so their comments
cannot change (FROZEN below). Run by `make test-docs`; no dependency beyond Python 3.

Usage: python3 scripts/check-doc-references.py
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Migrations written before this check existed: applied and checksummed, never edited again.
FROZEN = {
    f"migrations/{engine}/{name}"
    for engine in ("sqlite", "postgresql")
    for name in (
        "0006_drop_created_index.sql",
        "0007_insights_by_slot.sql",
        "0012_subject_indexes.sql",
        "0013_decisions.sql",
        "0014_training_capture.sql",
        "0015_shadow_and_score_bins.sql",
    )
}
TEXT_SUFFIXES = (".swift", ".md", ".sh", ".py", ".json", ".jsonl", ".js", ".ts", ".go", ".java",
                 ".c", ".h", ".sql", ".yaml", ".yml", ".toml", ".txt", ".lua", ".in", ".patch",
                 "Makefile", ".css", ".html")

# A line's leading comment marker, dropped when a reference continues on the next line.
COMMENT_LEAD = re.compile(r"^\s*(?:///|//|#|\*|--|/\*\*?)?\s*")
# `docs/PAGE.md` or, inside docs/, `PAGE.md`, optionally as a link `[…](PAGE.md)`, then a quoted
# section: "…", '…' or “…”.
SECTION_REF = re.compile(
    r"(?P<page>(?:docs/)?[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)(?:#[^)\s]*)?`?\]?(?:\([^)\s]*\))?"
    r",?[ ]+(?:\"(?P<dq>[^\"$\\\n]{1,120})\"|“(?P<cq>[^”\n]{1,120})”|'(?P<sq>[A-Z][^'\n]{0,119})')")
LINK = re.compile(r"\]\((?P<target>[^)\s]+?)\)")
PRODUCT = re.compile(r"PRODUCT\.md")
SECTION_SIGN = re.compile(r"§\s?\d")
# What may stand before a `§N` that is not PRODUCT.md's: an RFC named earlier in the passage,
# or another document named right before it.
RFC = re.compile(r"RFC\s?\d{3,5}")
NAMED_DOCUMENT = re.compile(r"[A-Za-z0-9_-]+\.md`?,?\s*$")


def tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for base, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
            files += [os.path.relpath(os.path.join(base, n), ROOT) for n in names]
    return sorted(f for f in files if f.endswith(TEXT_SUFFIXES) and os.path.isfile(os.path.join(ROOT, f)))


def headings(path, cache={}):
    """The headings of a Markdown file outside code blocks, as (text, anchor) pairs."""
    if path in cache:
        return cache[path]
    found, seen, fence = [], {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            m = re.match(r"^(```+|~~~+)", stripped)
            if m:
                if fence is None:
                    fence = m.group(1)[:3]
                elif stripped.startswith(fence):
                    fence = None
                continue
            if fence is None:
                h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if h:
                    text = h.group(1)
                    slug = github_slug(text)
                    n = seen.get(slug, 0)
                    seen[slug] = n + 1
                    found.append((plain(text), slug if n == 0 else f"{slug}-{n}"))
    cache[path] = found
    return found


def plain(text):
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()


def github_slug(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def names_heading(section, page):
    want = plain(section)
    for text, _ in headings(page):
        if text == want:
            return True
        if text.startswith(want) and text[len(want):][:2] in (": ", " (", ", ", " —", ". ", ":", "."):
            return True
    return False


def joined(text):
    """The file's lines joined by spaces, comment markers of continuation lines dropped, and
    where each line starts in the result (to report line numbers)."""
    parts, starts, pos = [], [], 0
    for i, line in enumerate(text.split("\n")):
        piece = line if i == 0 else COMMENT_LEAD.sub("", line, count=1)
        starts.append(pos)
        parts.append(piece)
        pos += len(piece) + 1
    return " ".join(parts), starts


def line_of(starts, offset):
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def resolve(page, citing):
    """The file a page name means, seen from the citing file, or None."""
    candidates = [page] if page.startswith("docs/") else [
        os.path.normpath(os.path.join(os.path.dirname(citing), page)), os.path.join("docs", page), page]
    for c in candidates:
        if os.path.isfile(os.path.join(ROOT, c)):
            return c
    return None


def main():
    problems = []
    files = tracked_files()
    references = links = 0
    for rel in files:
        if rel in FROZEN or rel == "scripts/check-doc-references.py":
            continue
        try:
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        flat, starts = joined(text)

        for m in PRODUCT.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{line}: cites PRODUCT.md, which is not in the repository: "
                            "point at the docs/ page and section that states the rule")
        for m in SECTION_SIGN.finditer(flat):
            before = flat[max(0, m.start() - 800):m.start()]
            if not RFC.search(before) and not NAMED_DOCUMENT.search(before):
                problems.append(f"{rel}:{line_of(starts, m.start())}: a numbered section (§) of no "
                                "named document: name the RFC, or point at a docs/ page and section")

        for m in SECTION_REF.finditer(flat):
            page, section = m.group("page"), m.group("dq") or m.group("cq") or m.group("sq")
            if not page.startswith("docs/") and not rel.startswith("docs/"):
                continue
            target = resolve(page, rel)
            line = line_of(starts, m.start())
            if target is None:
                if page.startswith("docs/") or rel.startswith("docs/"):
                    problems.append(f"{rel}:{line}: {page} does not exist")
                continue
            if not target.startswith("docs/"):
                continue
            references += 1
            if not names_heading(section, os.path.join(ROOT, target)):
                problems.append(f'{rel}:{line}: {target} has no section "{section}"')

        if rel.endswith(".md"):
            for m in LINK.finditer(text):
                link = m.group("target")
                if re.match(r"^[a-z][a-z0-9+.-]*:", link) or link.startswith("<"):
                    continue
                path, _, anchor = link.partition("#")
                line = text.count("\n", 0, m.start()) + 1
                target = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
                if not os.path.exists(os.path.join(ROOT, target)):
                    problems.append(f"{rel}:{line}: link to {path}, which does not exist")
                    continue
                links += 1
                if anchor and target.endswith(".md"):
                    if anchor not in {a for _, a in headings(os.path.join(ROOT, target))}:
                        problems.append(f"{rel}:{line}: {target} has no heading for #{anchor}")

    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"doc-references: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"doc-references: {references} section references and {links} links in {len(files)} files hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
