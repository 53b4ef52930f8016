#!/usr/bin/env python3
"""The launcher's folders are layers: a file may include launcher headers only
from its own folder and the folders below it (the order of
launcher/CMakeLists.txt). CMake's target links catch a missing symbol, not an
upward #include of a header-only type; this catches that.

  check_launcher_layers.py --source-dir SRC

Exit 0 when every include points down or sideways within a folder, 1 naming
each file:line that points up, 2 for usage errors.
"""
import argparse
import os
import re
import sys

# Each folder and what it may include besides itself (transitively closed).
BELOW = {
    "base": set(),
    "shim": {"base"},
    "discovery": {"base"},
    "core": {"base", "discovery"},
    "engine": {"base", "discovery", "core"},
    "job": {"base", "discovery", "core", "engine"},
    "check": {"base", "discovery", "core", "engine"},
    "sim": {"base", "discovery", "core"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"launcher/([^"]+)"')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    launcher = os.path.join(args.source_dir, "launcher")
    if not os.path.isdir(launcher):
        print(f"check_launcher_layers: no launcher/ under {args.source_dir}", file=sys.stderr)
        return 2
    problems = []
    checked = 0
    for folder in sorted(os.listdir(launcher)):
        if not os.path.isdir(os.path.join(launcher, folder)):
            continue  # the front ends at the top may include anything
        if folder not in BELOW:
            problems.append(f"launcher/{folder}/: a folder this check does not know; add it to BELOW with its layer")
            continue
        for dirpath, _, files in os.walk(os.path.join(launcher, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, args.source_dir)
                checked += 1
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        parts = m.group(1).split("/")
                        target = parts[0] if len(parts) > 1 else "(top)"
                        if target != folder and target not in BELOW[folder]:
                            problems.append(f"{rel}:{lineno}: includes launcher/{m.group(1)}, but {target} is not "
                                            f"below {folder}; move the shared piece down or the code up")
    for p in problems:
        print(p)
    print(f"check_launcher_layers: {checked} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
