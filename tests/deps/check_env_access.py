#!/usr/bin/env python3
"""The product reads its environment only through common/env.h (GetEnv,
HasEnv, EnvOr, EnvIs, DescriptorFromEnv, or an EnvLookup such as
ProcessEnv()), so every read of the environment contract is in one place and
testable with a fake environment.

  check_env_access.py --source-dir SRC

Exit 0 when no product source outside common/env.h calls getenv, 1 naming
each file:line that does, 2 for usage errors.
"""
import argparse
import os
import re
import sys

PRODUCT = ["common", "policies", "partitioner", "slurm", "launcher", "runtime", "examples"]
CALL = re.compile(r"\b(std::)?(secure_)?getenv\s*\(")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.source_dir, "common")):
        print(f"check_env_access: no common/ under {args.source_dir}", file=sys.stderr)
        return 2
    problems = []
    for top in PRODUCT:
        for dirpath, _, files in os.walk(os.path.join(args.source_dir, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".cu")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, args.source_dir)
                if rel == os.path.join("common", "env.h"):
                    continue
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        code = line.split("//", 1)[0]
                        if CALL.search(code):
                            problems.append(f"{rel}:{lineno}: calls getenv; use common/env.h (GetEnv, HasEnv, "
                                            "EnvOr, EnvIs) or take an EnvLookup")
    for p in problems:
        print(p)
    print(f"check_env_access: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
