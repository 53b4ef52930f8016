#!/usr/bin/env python3
"""Checks `gpulaunch plan` on every recorded machine against an oracle computed
here from the recording itself, never from gpulaunch's code:

  hwloc XML: hwloc-calc gives each GPU's local CPUs and package; the PCI tree
             of the file gives the path between a GPU and each NIC.
  NCCL XML:  walking the file: the <cpu> above a device gives its CPUs, the
             <pci> nesting the path.

For each machine, one rank per GPU (`plan -n GPUS --gpus-per-rank 1`): every
rank's CPUs are local to its GPU (or, where more ranks share a locality than
it has cores, the rank may run unbound on every CPU: the documented fallback), its NIC is of the nearest path type the
machine offers that GPU (NCCL's order: PIX < PXB < PHB < NODE < SYS), no two
ranks share a GPU, and the plan is the same on a second run.
  oracle_check.py --bin build/bin --data tests/data
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

ORDER = ["PIX", "PXB", "PHB", "NODE", "SYS"]
GPU_VENDORS = {"10de", "1002", "8086"}


def path_type(a_chain, b_chain, a_package, b_package, host_bridge_of, packages):
    """Chains: the I/O ancestors of each device, top first (excluding itself)."""
    shared = 0
    while shared < len(a_chain) and shared < len(b_chain) and a_chain[shared] == b_chain[shared]:
        shared += 1
    if shared > 0:
        lca = a_chain[shared - 1]
        if host_bridge_of(lca):
            return "PHB"
        one_switch = len(a_chain) - shared <= 1 and len(b_chain) - shared <= 1
        return "PIX" if one_switch else "PXB"
    if a_package is not None and b_package is not None:
        return "NODE" if a_package == b_package else "SYS"
    return "NODE" if packages == 1 else "SYS"


# ---- hwloc XML -------------------------------------------------------------

def hwloc_calc(xml, location, *args):
    out = subprocess.run(["hwloc-calc", "--input", xml, *args, location], capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.strip().split(",") if x != ""]


def hwloc_machine(xml):
    root = ET.parse(xml).getroot()
    parent = {}
    for o in root.iter("object"):
        for c in o.findall("object"):
            parent[c] = o

    def io_chain(obj):  # bridges above obj, top first
        chain, p = [], parent.get(obj)
        while p is not None and p.get("type") == "Bridge":
            chain.append(p)
            p = parent.get(p)
        return chain[::-1]

    gpus, nics = [], []
    for o in root.iter("object"):
        if o.get("type") != "PCIDev":
            continue
        pci_type = (o.get("pci_type") or "").split()
        klass, vendor = (pci_type[0] if pci_type else ""), (pci_type[1][1:5] if len(pci_type) > 1 else "")
        if (klass.startswith("03") or klass.startswith("12")) and vendor in GPU_VENDORS:
            gpus.append(o)
    osdevs = [o for o in root.iter("object") if o.get("type") == "OSDev"]
    rdma_pci = {parent[o] for o in osdevs if o.get("osdev_type") == "3"}
    for o in osdevs:
        name = o.get("name") or ""
        if o.get("osdev_type") == "3" or (o.get("osdev_type") == "2" and name.startswith("hsi") and
                                          parent[o] not in rdma_pci):
            if parent[o].get("type") == "PCIDev":
                nics.append((name, parent[o]))
    gpus.sort(key=lambda g: g.get("pci_busid"))
    packages = len([o for o in root.iter("object") if o.get("type") == "Package"])

    def package(busid):
        p = hwloc_calc(xml, "pci=" + busid, "--physical-output", "--intersect", "Package")
        return p[0] if len(p) == 1 else None

    def host_bridge(bridge):
        return parent.get(bridge) is None or parent[bridge].get("type") != "Bridge"

    machine = {"gpus": [], "nics": [n for n, _ in nics]}
    nic_info = [(name, io_chain(pci), package(pci.get("pci_busid"))) for name, pci in nics]
    for g in gpus:
        bus = g.get("pci_busid")
        chain, pkg = io_chain(g), package(bus)
        cpus = set(hwloc_calc(xml, "pci=" + bus, "--physical-output", "--intersect", "PU"))
        cores = subprocess.run(["hwloc-calc", "--input", xml, "-N", "core", "pci=" + bus], capture_output=True,
                               text=True, check=True).stdout.strip()
        types = {name: path_type(chain, nchain, pkg, npkg, host_bridge, packages) for name, nchain, npkg in nic_info}
        machine["gpus"].append({"bus": bus, "cpus": cpus, "cores": int(cores), "nic_types": types})
    machine["all_cpus"] = set(hwloc_calc(xml, "all", "--physical-output", "--intersect", "PU"))
    return machine


# ---- NCCL XML ----------------------------------------------------------------

def cpumask(text):
    words, pus = text.split(","), set()
    for i, w in enumerate(words):
        bits, base = int(w, 16), 32 * (len(words) - 1 - i)
        pus |= {base + b for b in range(32) if bits >> b & 1}
    return pus


RDMA_LIKE = ("eth", "en", "ib", "bond", "hsi", "cxi")


def nccl_machine(xml):
    root = ET.parse(xml).getroot()
    gpus, nics = [], []  # (bus, chain, cpu numaid, cpus) / (name, chain, numaid)

    def visit(pci, chain, numa, cpus):
        bus = pci.get("busid").lower()
        kids = [c for c in pci if c.tag in ("pci", "gpu", "nic")]
        for c in kids:
            if c.tag == "pci":
                visit(c, chain + [bus], numa, cpus)
            elif c.tag == "gpu":
                gpus.append((bus, chain, numa, cpus))
            else:
                for net in c.findall("net"):
                    name = net.get("name")
                    port = net.get("port") or "1"
                    ucx = name if name.startswith(RDMA_LIKE) or ":" in name else name + ":" + ("1" if port == "0" else port)
                    nics.append((ucx, chain, numa))
        if not kids:
            klass = int(pci.get("class") or "0", 16)
            vendor = (pci.get("vendor") or "0x0")[2:].lower().rjust(4, "0")
            base, sub = klass >> 16, (klass >> 8) & 0xff
            if (base == 0x03 and (sub == 0x02 or vendor in GPU_VENDORS)) or (base == 0x12 and vendor in GPU_VENDORS):
                gpus.append((bus, chain, numa, cpus))
            elif base == 0x02 and sub in (0x00, 0x07):
                nics.append((bus, chain, numa))

    for cpu in root.findall("cpu"):
        numa, cpus = cpu.get("numaid"), cpumask(cpu.get("affinity"))
        for c in cpu:
            if c.tag == "pci":
                visit(c, ["cpu" + numa], numa, cpus)
            elif c.tag == "nic":
                for net in c.findall("net"):
                    nics.append((net.get("name"), ["cpu" + numa], numa))
    gpus.sort(key=lambda g: g[0])
    machine = {"gpus": [], "nics": [n[0] for n in nics], "all_cpus": set()}
    for bus, chain, numa, cpus in gpus:
        types = {name: path_type(chain, nchain, numa, nnuma, lambda b: b.startswith("cpu"), 0)
                 for name, nchain, nnuma in nics}
        machine["gpus"].append({"bus": bus, "cpus": cpus, "cores": len(cpus), "nic_types": types})
    for cpu in root.findall("cpu"):
        machine["all_cpus"] |= cpumask(cpu.get("affinity"))
    return machine


# ---- the check -----------------------------------------------------------------

def plan(binary, xml, gpus):
    out = subprocess.run([binary, "plan", "-n", str(gpus), "--gpus-per-rank", "1", "--format", "json",
                          "--topology-file", xml], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return out.stdout


def check(binary, xml, machine):
    problems = []
    n = len(machine["gpus"])
    text = plan(binary, xml, n)
    if plan(binary, xml, n) != text:
        problems.append("a second run gave another plan")
    ranks = json.loads(text)["ranks"]
    used = [r["gpus"][0] for r in ranks]
    if len(set(used)) != len(used):
        problems.append("ranks share a GPU: %s" % used)
    sharing = {}
    for g in machine["gpus"]:
        sharing[frozenset(g["cpus"])] = sharing.get(frozenset(g["cpus"]), 0) + 1
    for r in ranks:
        g = machine["gpus"][r["gpus"][0]]
        stray = set(r["cpus"]) - g["cpus"]
        crowded = sharing[frozenset(g["cpus"])] > g["cores"]
        if stray and not (crowded and set(r["cpus"]) == machine["all_cpus"]):
            problems.append("rank %d: CPUs %s are not local to GPU %s" % (r["rank"], sorted(stray)[:4], g["bus"]))
        if not g["nic_types"]:
            continue
        nearest = min(g["nic_types"].values(), key=ORDER.index)
        nic = r["nic"]
        got = g["nic_types"].get(nic, g["nic_types"].get(nic.split(":")[0]))
        if got is None:
            problems.append("rank %d: NIC %s is not a data NIC of the recording" % (r["rank"], nic))
        elif got != nearest:
            problems.append("rank %d: GPU %s got %s (%s) but a %s NIC exists" % (r["rank"], g["bus"], nic, got, nearest))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    binary = os.path.join(a.bin, "gpulaunch")
    skip = {"ncv4-graph.xml", "g5.48xl-topo.xml", "p5.48xl-topo.xml"}  # no host: refused by design
    failed, checked = 0, 0
    for kind, load in (("hwloc", hwloc_machine), ("nccl", nccl_machine)):
        for xml in sorted(glob.glob(os.path.join(a.data, "topologies", kind, "**", "*.xml"), recursive=True)):
            if os.path.basename(xml) in skip:
                continue
            name = os.path.relpath(xml, os.path.join(a.data, "topologies"))
            machine = load(xml)
            if not machine["gpus"]:
                continue
            try:
                problems = check(binary, xml, machine)
            except RuntimeError as e:
                problems = ["plan failed: %s" % e]
            checked += 1
            nearest = sorted({min(g["nic_types"].values(), key=ORDER.index) for g in machine["gpus"] if g["nic_types"]})
            print("%-45s %2d GPUs %2d NICs nearest %-12s %s" % (name, len(machine["gpus"]), len(machine["nics"]),
                                                               ",".join(nearest) or "-",
                                                               "ok" if not problems else "FAIL"))
            for p in problems:
                print("    " + p)
            failed += bool(problems)
    print("%d machines checked, %d failed" % (checked, failed))
    return 1 if failed or checked < 12 else 0


if __name__ == "__main__":
    sys.exit(main())
