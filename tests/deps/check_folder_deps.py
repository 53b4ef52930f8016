#!/usr/bin/env python3
"""The top-level folders' dependency rules (docs/architecture.md), checked on
the sources' #include lines. CMake's target links catch a missing symbol, but
every target has the project root on its include path, so an include of a
header-only type from a folder it must not see would go unnoticed: this
catches that (launcher/'s own layers: check_launcher_layers.py).
  check_folder_deps.py --source-dir SRC
Exit 0 when every project include is allowed, 1 naming each file:line that
is not, 2 for usage errors.
"""
import argparse
import os
import re
import sys

# Each folder and the project folders its files may include (itself too).
MAY_INCLUDE = {
    "common": {"common"},
    "policies": {"common", "policies"},
    "partitioner": {"common", "partitioner"},
    "slurm": {"common", "slurm"},
    "runtime": {"common", "partitioner", "runtime"},
    "launcher": {"common", "policies", "partitioner", "slurm", "launcher"},
    "examples": {"common", "partitioner", "runtime", "examples"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.source_dir, "common")):
        print(f"check_folder_deps: no common/ under {args.source_dir}", file=sys.stderr)
        return 2
    problems, checked = [], 0
    for folder, allowed in sorted(MAY_INCLUDE.items()):
        root = os.path.join(args.source_dir, folder)
        if not os.path.isdir(root):
            continue  # a tree without it (the test's planted one)
        for dirpath, _, files in os.walk(root):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".cu")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, args.source_dir)
                checked += 1
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in MAY_INCLUDE and m.group(1) not in allowed:
                            problems.append(f"{rel}:{lineno}: includes {m.group(1)}/, which {folder}/ may not "
                                            f"depend on (it may: {', '.join(sorted(allowed))})")
    for p in problems:
        print(p)
    print(f"check_folder_deps: {checked} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
