#!/usr/bin/env python3
"""Print every function in engine/ and src/ *.cc longer than a limit, longest first.

A brace-matching scan, not a parser: comments, string and character literals (raw strings too) are
blanked first, then every top-level `{` whose preceding text ends in a parameter list `)` (optionally
followed by const/noexcept/override/-> type/initialiser list) opens a function body; the body's
length is counted from the line of its name to the closing brace. Namespace, class, struct, enum
and lambda braces nest inside and are not functions of their own: a lambda counts towards its
enclosing function, which is the point (it is part of the same reading).

  function-lengths.py [--limit N] [--allow FILE] [--top K] [ROOT]
  function-lengths.py --self-test      (the scan against a made-up tree; CTest function_lengths_checker)

Exits 1 if a function over the limit is not on the allow-list (lines `path:function`, `#` comments);
exits 1 as well if an allow-listed function no longer exceeds the limit, so the list only shrinks.
"""
import argparse
import pathlib
import re
import sys

SCANNED = ("engine", "src")


def blank_literals(text):
    """Comments and literals become spaces of the same length; newlines stay, so lines still count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


# The text between a function's `)` and its `{`: qualifiers, a trailing return type, an initialiser list.
FUNCTION_TAIL = re.compile(r"\)\s*(const|noexcept|override|final|mutable|&|&&|->[^;{}]*|\s)*(:[^;{}]*)?$", re.S)
NAME_BEFORE_PARAMS = re.compile(r"([A-Za-z_~][\w:<>~]*(?:operator\s*[^\s(]+)?)\s*$")
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof"}


def matching_open_paren(code, close):
    depth = 0
    for k in range(close, -1, -1):
        if code[k] == ")":
            depth += 1
        elif code[k] == "(":
            depth -= 1
            if depth == 0:
                return k
    return -1


def functions(code):
    """(name, first line, line count) of every outermost function body in blanked code."""
    found = []
    stack = []  # for each open brace: True if it opened a function body counted here
    in_function = 0
    statement_start = 0
    for i, c in enumerate(code):
        if c == "{":
            opens = False
            if in_function == 0:
                head = code[statement_start:i]
                tail = FUNCTION_TAIL.search(head)
                if tail:
                    close = statement_start + tail.start()
                    open_paren = matching_open_paren(code, close)
                    name = NAME_BEFORE_PARAMS.search(code[statement_start:open_paren]) if open_paren > 0 else None
                    if name and name.group(1).split("::")[-1] not in NOT_FUNCTIONS:
                        opens = True
                        found.append([name.group(1), code.count("\n", 0, statement_start + name.start(1)) + 1, i])
            stack.append(opens)
            in_function += opens
            statement_start = i + 1
        elif c == "}":
            if stack and stack.pop():
                in_function -= 1
                entry = found[-1]
                entry[2] = code.count("\n", 0, i) + 1 - entry[1] + 1
            statement_start = i + 1
        elif c == ";":
            statement_start = i + 1
    return [tuple(f) for f in found]


def scan(root):
    rows = []
    for directory in SCANNED:
        for path in sorted((root / directory).rglob("*.cc")):
            code = blank_literals(path.read_text(encoding="utf-8", errors="replace"))
            for name, line, length in functions(code):
                rows.append((length, f"{path.relative_to(root)}:{line}", path.relative_to(root).as_posix(), name))
    rows.sort(key=lambda r: (-r[0], r[1]))
    return rows


def read_allow_list(path):
    allowed = set()
    if path:
        for line in pathlib.Path(path).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(line)
    return allowed


def self_test():
    """The scan on a made-up tree: a long function with a lambda and braces in literals is one
    function of the right length; class bodies, control statements and short functions are not
    reported; the allow-list admits a listed function and rejects a stale entry."""
    import tempfile
    body = "\n".join(f"  x += {i};  // {{ not a brace" for i in range(130))
    source = ("namespace n {\nstruct S {\n  int f() const { return 1; }\n};\n"
              "int Long(int x) {\n  auto l = [&](int y) { return y + '}'; };\n  const char* s = R\"({{{)\";\n"
              f"  if (x) {{\n{body}\n  }}\n  return x;\n}}\nint Short() {{ return 0; }}\n}}\n")
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "engine" / "m").mkdir(parents=True)
        (root / "src").mkdir()
        (root / "engine" / "m" / "a.cc").write_text(source)
        (root / "src" / "main.cc").write_text("int main() { return 0; }\n")
        rows = scan(root)
        found = {(name, where, length) for length, where, _, name in rows}
        expected_long = ("Long", "engine/m/a.cc:5", 137)   # its name line to its closing brace
        problems = []
        if expected_long not in found:
            problems.append(f"expected {expected_long}, scanned {sorted(found)}")
        if {name for _, _, _, name in rows} != {"f", "Long", "Short", "main"}:
            problems.append(f"expected the functions f, Long, Short and main, scanned {sorted(found)}")
        allow = root / "allow.txt"
        allow.write_text("engine/m/a.cc:Long  # reason\n")
        if read_allow_list(allow) != {"engine/m/a.cc:Long"}:
            problems.append("the allow-list reader kept a comment")
    for p in problems:
        print("self-test:", p)
    print("self-test", "failed" if problems else "passed")
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=120)
    parser.add_argument("--allow", help="file of path:function allowed over the limit")
    parser.add_argument("--top", type=int, default=0, help="also print the K longest functions")
    parser.add_argument("--self-test", action="store_true", help="check the scan itself on a made-up tree")
    parser.add_argument("root", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = pathlib.Path(args.root)
    rows = scan(root)
    allowed = read_allow_list(args.allow)

    if args.top:
        print(f"the {args.top} longest functions:")
        for length, where, _, name in rows[:args.top]:
            print(f"  {length:4d}  {where}  {name}")
    failures = 0
    over = {f"{path}:{name}" for length, _, path, name in rows if length > args.limit}
    for length, where, path, name in rows:
        if length <= args.limit:
            break
        key = f"{path}:{name}"
        mark = "allowed" if key in allowed else "OVER THE LIMIT"
        failures += key not in allowed
        print(f"{length:4d}  {where}  {name}  ({mark})")
    for key in sorted(allowed - over):
        print(f"{key}: on the allow-list but no longer over {args.limit} lines: remove it from the list")
        failures += 1
    if failures:
        print(f"{failures} function(s) break the {args.limit}-line limit or a stale allow-list entry")
        return 1
    print(f"no function over {args.limit} lines outside the allow-list ({len(over)} allowed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
