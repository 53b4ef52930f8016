#!/usr/bin/env python3
"""Checks that the product builds with the base packages alone.

The README's first command installs only `scripts/install-deps.sh`'s base list
and builds only the product (tools, runtime, examples). So every third-party
header that a product object includes, directly or through another header,
must come from a base package or from a package a base package depends on,
and never from a package that only `--test` installs.

How: Ninja records every header each object was compiled against
(`ninja -t deps`, exact, transitive). Objects under tests/ and benchmarks/ are
test code; every other object is product. Each header outside the source and
build trees (and the optional CUDA toolkit's, which the machine image brings
and CMake finds at configure time, and the compiler's own resource directory:
clang's builtin headers and sanitizer lists belong to whichever compiler builds,
and the base list's compiler is gcc) is mapped to its Debian package with `dpkg -S`; the base list's
dependency closure comes from `apt-cache depends --recurse --installed`.

Exit 0 when every header is accounted for, 1 naming each object, header and
package that is not, 2 for usage errors.
"""
import argparse
import os
import subprocess
import sys

TEST_OBJECT_DIRS = ("tests/", "benchmarks/")


def product_headers(build_dir, source_dir, optional_roots):
    """{header path: first product object that includes it} from Ninja's deps log."""
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], check=True, capture_output=True, text=True).stdout
    headers, obj, objects = {}, None, 0
    roots = tuple(os.path.realpath(p) + os.sep for p in (build_dir, source_dir, *optional_roots))
    for line in out.splitlines():
        if line and not line[0].isspace():
            name = line.split(":", 1)[0]
            obj = None if name.startswith(TEST_OBJECT_DIRS) else name
            objects += obj is not None
        elif obj and line.strip():
            path = line.strip()
            if not os.path.realpath(path).startswith(roots):
                headers.setdefault(path, obj)
    return headers, objects


def owning_packages(paths):
    """{path: package} for every path dpkg knows (directly or by its real path)."""
    owners = {}
    for batch_start in range(0, len(paths), 200):
        batch = paths[batch_start:batch_start + 200]
        for attempt in (batch, [os.path.realpath(p) for p in batch]):
            res = subprocess.run(["dpkg", "-S", *attempt], capture_output=True, text=True)
            for line in res.stdout.splitlines():
                pkgs, _, path = line.partition(": ")
                for orig, tried in zip(batch, attempt):
                    if tried == path and orig not in owners:
                        owners[orig] = pkgs.split(",")[0].strip().split(":")[0]
    return owners


def dependency_closure(packages):
    res = subprocess.run(["apt-cache", "depends", "--recurse", "--installed", "--no-recommends", "--no-suggests",
                          "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *packages],
                         capture_output=True, text=True)
    closure = set(packages)
    for line in res.stdout.splitlines():
        if line and not line[0].isspace() and not line.startswith("<"):
            closure.add(line.strip().split(":")[0])
    return closure


def install_list(source_dir, *flags):
    script = os.path.join(source_dir, "scripts", "install-deps.sh")
    out = subprocess.run([script, "--list", *flags], check=True, capture_output=True, text=True).stdout
    return [p for p in out.split() if p]


def problems_for(headers, owners, allowed, test_only):
    """One line per header whose package the first command would not install."""
    problems = []
    for header, obj in sorted(headers.items()):
        pkg = owners.get(header)
        if pkg is None:
            problems.append(f"{obj}: includes {header}, which no Debian package provides (install it through "
                            "a package of scripts/install-deps.sh's base list)")
        elif pkg in test_only and pkg not in allowed:
            problems.append(f"{obj}: includes {header} from {pkg}, which only 'scripts/install-deps.sh --test' "
                            "installs: move the package to the base list, or the code to tests/")
        elif pkg not in allowed:
            problems.append(f"{obj}: includes {header} from {pkg}, which the base list neither names nor depends "
                            "on: add it to scripts/install-deps.sh's base list")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--optional-roots", default="",
                    help="';'-separated include roots of optional toolkits found at configure time (CUDA)")
    ap.add_argument("--compiler-roots", default="",
                    help="';'-separated directories of the compiler's own headers (clang's resource directory)")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.build_dir, ".ninja_deps")):
        print(f"check_header_packages: {args.build_dir} is not a built Ninja tree (no .ninja_deps); "
              "build it with scripts/build.sh first", file=sys.stderr)
        return 2
    base = install_list(args.source_dir)
    test_only = set(install_list(args.source_dir, "--test-only")) - set(base)
    allowed = dependency_closure(base)
    optional_roots = [r for r in (args.optional_roots + ";" + args.compiler_roots).split(";") if r]
    headers, objects = product_headers(args.build_dir, args.source_dir, optional_roots)
    owners = owning_packages(sorted(headers))

    # The check must be able to fail: a header of a --test-only package, seen
    # from a product object, is flagged.
    probe = {"/usr/include/gtest/gtest.h": "probe.o"}
    assert problems_for(probe, {"/usr/include/gtest/gtest.h": "libgtest-dev"}, allowed, test_only), \
        "a --test-only package's header was not flagged"
    if objects < 50 or len(headers) < 100:
        print(f"check_header_packages: only {objects} product objects and {len(headers)} system headers in "
              f"{args.build_dir}'s deps log: is it fully built?", file=sys.stderr)
        return 1
    problems = problems_for(headers, owners, allowed, test_only)
    for p in problems:
        print("check_header_packages: " + p)
    used = sorted({owners[h] for h in headers if h in owners})
    print(f"{objects} product objects include {len(headers)} system headers from {len(used)} packages: "
          f"{', '.join(used)}")
    print(f"{len(headers) - len(problems)} passed, {len(problems)} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
