#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The include graph of psfsim's sources: layers, upward includes, cycles.

    scripts/include_graph.py [--tree DIR] [--check] [--edges]

Two graphs: files (an edge A -> B is a quoted #include in A naming B), and
rooms, a source file with its header counted once (foo.c, foo.cu and foo.h
are one room: an edge when any file of A includes one of B). A cycle of
rooms need not be a loop of includes: a header-only helper that needs its
user's types (optics/aperture_geom.h did, until the types moved to
optics/aperture_types.h) makes one, as did a loader that implemented a
module's API header whose namesake .c was the module (the old fits_io.h and
fits_io.c: a module's API, ABI, loader and code now have names of their
own, docs/design.md "Modules"). Reported for each graph:
- depth: the longest include chain (the number of dependency layers);
- upward: includes from a folder to a folder above it in LAYERS (a lower
  layer depending on a higher one) and includes between cpu/ and gpu/;
- cycles: strongly connected groups of more than one room;
- the largest files.
--tree analyses another checkout (say, an old commit's `git worktree`); its
files in a flat app/ are placed in the layer where a file of that name
lives in this checkout, so an old tree is measured against today's layers.
--check exits 1 when there is an upward include or a cycle, of files or of
rooms (scripts/test.sh calls it; the room cycles reached 0 in issue 25).
"""
import argparse
import os
import re
import sys

# Bottom to top. cpu/ and gpu/ share a rank: neither may include the other.
LAYERS = [
    ("optics", 0),
    ("backend", 1),
    ("cpu", 2),
    ("gpu", 2),
    ("app/base", 3),
    ("app/formats", 4),
    # A module's own code (docs/design.md, "Modules"): built into its library,
    # included by nothing; it sees its ABI header and the folders below.
    ("app/formats/fits", 4.5),
    ("app/formats/hdf5", 4.5),
    ("app/config", 5),
    ("app/set", 6),
    ("app/select", 7),
    ("app/select/plot", 7.5),
    ("lib/fit", 8),  # weighted least-squares fitting of an image model (phase retrieval)
    ("lib/engine", 8),  # the engine under the command and the library: open, lanes
    ("app/output", 9),  # the set's files on disk
    ("app/dataset", 10),  # NAME.h5 and its sidecar NAME.json
    ("app/run", 11),  # a run of the command
    ("lib", 13),  # libpsfsim: beside the command, linking app/output's FITS header
    ("app/retrieve", 13.5),  # psfsim --retrieve: the command over libpsfsim's psfsim_retrieve
    ("app", 14),  # main.c
]
SOURCE_DIRS = [name for name, _ in LAYERS]
EXTS = (".c", ".h", ".cu")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(path):
    """foo.c, foo.h, foo.cu and a private header foo_priv.h -> foo (one room)."""
    base = os.path.splitext(path)[0]
    return base[: -len("_priv")] if base.endswith("_priv") else base


def file_of(path):
    return path


def sources(tree):
    out = []
    for d in SOURCE_DIRS:
        full = os.path.join(tree, d)
        if not os.path.isdir(full):
            continue
        for f in sorted(os.listdir(full)):
            if f.endswith(EXTS) and os.path.isfile(os.path.join(full, f)):
                out.append(os.path.join(d, f))
    return out


# Files of a flat app/ renamed when they got their folders: old -> new room.
RENAMED = {
    "hdf5_set": "hdf5_labels",
    "set_hdf5": "run_dataset",
    # The modules' loader side (issue 25).
    "fits_io": "fits",
    "fits_module": "fits_loader",
    "hdf5_io": "h5set",
    "hdf5_module": "hdf5_loader",
    "probe_plot": "plot",
    "plot_module": "plot_loader",
    "gpu_module": "gpu_loader",
}


def layer_table(here):
    """Basename -> folder, for the files of this checkout's app/ folders."""
    table = {}
    for p in sources(here):
        if p.startswith("app/"):
            table.setdefault(os.path.basename(p), os.path.dirname(p))
            table.setdefault(os.path.basename(room_of(p)), os.path.dirname(p))
    for old, new in RENAMED.items():
        if new in table:
            table[old] = table[new]
            for ext in EXTS:
                table[old + ext] = table[new]
    return table


def resolve(tree, src, name):
    for cand in (os.path.join(os.path.dirname(src), name), name):
        cand = os.path.normpath(cand)
        if os.path.isfile(os.path.join(tree, cand)):
            return cand
    return None


def graph(tree, node):
    files = sources(tree)
    edges = {}
    for f in files:
        with open(os.path.join(tree, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        a = node(f)
        edges.setdefault(a, set())
        for name in INCLUDE.findall(text):
            target = resolve(tree, f, name)
            if target is None or not target.endswith(EXTS):
                continue
            b = node(target)
            if b != a:
                edges[a].add(b)
                edges.setdefault(b, set())
    return files, edges


def sccs(edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def depth(edges, comps):
    """Longest chain of rooms, a cycle counted as one room."""
    comp_of = {v: i for i, c in enumerate(comps) for v in c}
    memo = {}

    def d(c):
        if c in memo:
            return memo[c]
        memo[c] = 1
        best = 1
        for v in comps[c]:
            for w in edges[v]:
                if comp_of[w] != c:
                    best = max(best, 1 + d(comp_of[w]))
        memo[c] = best
        return best

    sys.setrecursionlimit(10000)
    return max((d(i) for i in range(len(comps))), default=0)


def folder_of(room, table):
    folder = os.path.dirname(room)
    if folder == "app":  # an old flat app/: today's layer of that name
        folder = table.get(os.path.basename(room), "app")
    return folder


def report(label, edges, table, rank, show):
    comps = sccs(edges)
    cycles = [sorted(c) for c in comps if len(c) > 1]
    upward = []
    for a in sorted(edges):
        fa = folder_of(a, table)
        for b in sorted(edges[a]):
            fb = folder_of(b, table)
            ra, rb = rank.get(fa), rank.get(fb)
            if ra is None or rb is None:
                continue
            if rb > ra or (ra == rb and fa != fb):
                upward.append((a, fa, b, fb))
    per_folder = {}
    for r in edges:
        per_folder[folder_of(r, table)] = per_folder.get(folder_of(r, table), 0) + 1
    print(f"{label}: {len(edges)} ({', '.join(f'{k} {v}' for k, v in sorted(per_folder.items()))})")
    print(f"  includes: {sum(len(v) for v in edges.values())}")
    print(f"  depth (longest include chain): {depth(edges, comps)}")
    print(f"  upward includes: {len(upward)}")
    if show:
        for a, fa, b, fb in upward:
            print(f"    {a} ({fa}) -> {b} ({fb})")
    print(f"  cycles: {len(cycles)}")
    for c in cycles:
        print("    " + " <-> ".join(c))
    return len(upward) + len(cycles)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", default=None)
    ap.add_argument("--check", action="store_true", help="exit 1 on an upward include or a cycle of files or of rooms")
    ap.add_argument("--edges", action="store_true", help="print every upward include")
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tree = os.path.abspath(args.tree or here)
    table = layer_table(here)
    rank = dict(LAYERS)
    print(f"tree: {tree}")
    files, fedges = graph(tree, file_of)
    bad = report("files", fedges, table, rank, args.edges or args.check)
    _, redges = graph(tree, room_of)
    bad += report("rooms", redges, table, rank, args.edges)
    lines = []
    for f in files:
        with open(os.path.join(tree, f), encoding="utf-8", errors="replace") as fh:
            lines.append((sum(1 for _ in fh), f))
    lines.sort(reverse=True)
    print("largest files: " + ", ".join(f"{f} {n}" for n, f in lines[:6]))
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
