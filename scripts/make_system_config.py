#!/usr/bin/env python3
"""Generate ipusim system configs (configs/*.json) for multi-IPU Graphcore systems.

Each system is a set of overrides on a catalogue or chassis config ("extends"), so
the IPU figures live in one place (configs/ipus/*.json, configs/ipu-m2000.json) and
a system file adds only its IPU count, IPU-Links, host-link sharing and citations.

Systems
  pod16       IPU-POD16: 4 IPU-M2000 (16 GC200). Inside an M2000 every IPU pair is
              joined (as configs/ipu-m2000.json); between M2000s IPU i of M2000 m is
              joined to IPU i of M2000 m+1 and the top M2000 wraps to the bottom, so
              each IPU column is a ring of 4 (the rings GCL uses).
  pod64       IPU-POD64: 16 IPU-M2000 (64 GC200), the same wiring with rings of 16:
              a 2D torus of 4 (IPUs in an M2000, fully joined) x 16 (M2000s, a ring).
  pod128      IPU-POD128: two POD64 racks; IPU i of M2000 m in rack 0 joined to IPU i
              of M2000 m in rack 1 by that M2000's share of its 2 GW-Links (100GbE).
  pod256      IPU-POD256: four POD64 racks in a ring over the GW-Links: IPU i of M2000
              m in rack r joined to IPU i of M2000 m in rack r+1 (mod 4), one GW-Link
              of each M2000 towards each neighbouring rack.
  bow-pod16, bow-pod64, bow-pod128, bow-pod256
              the same systems built of Bow-2000 machines (configs/bow-2000.json: the
              IPU-M2000 with Bow IPUs at 1.85 GHz).
  dss8440-c2  Dell DSS8440 with 8 C2 cards (16 GC2, Mk1): a ladder. Rungs: the two
              IPUs of a card; rails: card c to card c+1, no wrap.

IPU numbering: M2000 m (of rack r) holds IPUs 64r + 4m .. 64r + 4m + 3; card c holds
IPUs 2c and 2c+1. Output is deterministic (fixed key and link order, fixed number
formatting), so regenerating leaves committed files unchanged; --check verifies that.
Figures come from docs/reference/ipu-hardware.md; docs/systems.md explains them.
"""

import argparse
import json
import math
import os
import sys

# --- Published figures (docs/reference/ipu-hardware.md) and derived ones ---------

IPU_LINK_BYTES_PER_S = 16e9        # [P,D] GC200: 10 links, 320 GB/s total = 16 GB/s per direction per link
IPU_LINK_LATENCY_S = 1e-6          # [U] as configs/ipu-m2000.json
M2000_PAIR_LINKS = 2               # [U] as configs/ipu-m2000.json: 2 links (32 GB/s) per IPU pair
RAIL_LINKS = 1                     # [D,U] 8 IPU-Link ports out of an M2000 / 4 IPUs = 1 up + 1 down per IPU
GW_LINK_BYTES_PER_S = 100e9 / 8    # [P] a GW-Link is 100GbE: 100 Gbit/s per direction
GW_LINKS_PER_M2000 = 2             # [P] 2 GW-Links per M2000 (400 Gbps bidirectional in all)
GW_LINK_LATENCY_S = 5e-6           # [U] as the 100GbE RoCE host link's assumed latency

MK1_LINK_BYTES_PER_S = 128e9 / 8   # [P] poplibs multi-IPU model: 128 Gbit/s per link
MK1_LINK_EFFICIENCY = 0.85         # [P] poplibs multi-IPU model: 0.85 efficiency
MK1_RUNG_LINKS = 4 + 2             # [P] per IPU: 4 links within a card + 2 cross-rung, both to the card's other IPU
MK1_RAIL_LINKS = 2                 # [P] per IPU: 2 up, 2 down


# --- Deterministic JSON ---------------------------------------------------------------

def number(x):
    """A JSON number as a person would write it: 4, 0.5, 16e9, 27.2e9, 1e-6."""
    if isinstance(x, bool):
        raise TypeError("not a number: %r" % x)
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "0"
    exponent = int(math.floor(math.log10(abs(x)) / 3) * 3)
    if exponent == 0:
        return "%.12g" % x
    mantissa = "%.12g" % (x / 10.0 ** exponent)
    return "%se%d" % (mantissa, exponent)


def value(v):
    if isinstance(v, dict):
        return "{" + ", ".join(json.dumps(k) + ": " + value(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    return number(v)


def render(config):
    """Top-level keys one per line; links and sources one entry per line."""
    lines = []
    keys = list(config)
    for i, key in enumerate(keys):
        comma = "," if i + 1 < len(keys) else ""
        v = config[key]
        if key in ("links", "sources") and v:
            opener, closer = ("[", "]") if isinstance(v, list) else ("{", "}")
            if isinstance(v, list):
                items = [value(x) for x in v]
            else:
                items = [json.dumps(k) + ": " + value(x) for k, x in v.items()]
            lines.append("  %s: %s" % (json.dumps(key), opener))
            for j, item in enumerate(items):
                lines.append("    " + item + ("," if j + 1 < len(items) else ""))
            lines.append("  " + closer + comma)
        else:
            lines.append("  %s: %s%s" % (json.dumps(key), value(v), comma))
    return "{\n" + "\n".join(lines) + "\n}\n"


# --- Topologies -----------------------------------------------------------------------

def link(a, b, bandwidth, latency, name=None):
    entry = {"ipus": [a, b], "bandwidthBytesPerSecond": bandwidth, "latencySeconds": latency}
    if name:
        entry["name"] = name
    return entry


def m2000_rack_links(m2000s, first_ipu=0):
    """M2000 m holds IPUs first_ipu + 4m .. + 3. Every pair inside an M2000 joined; IPU i of
    M2000 m joined to IPU i of M2000 (m+1) mod m2000s: a ring of m2000s per IPU column."""
    links = []
    pair_bw = M2000_PAIR_LINKS * IPU_LINK_BYTES_PER_S
    rail_bw = RAIL_LINKS * IPU_LINK_BYTES_PER_S
    for m in range(m2000s):
        base = first_ipu + 4 * m
        for a in range(4):
            for b in range(a + 1, 4):
                links.append(link(base + a, base + b, pair_bw, IPU_LINK_LATENCY_S))
    for m in range(m2000s):
        up = (m + 1) % m2000s
        if m2000s == 2 and m == 1:
            break  # two M2000s: one rail per column, not a doubled pair
        for i in range(4):
            a, b = first_ipu + 4 * m + i, first_ipu + 4 * up + i
            links.append(link(min(a, b), max(a, b), rail_bw, IPU_LINK_LATENCY_S))
    return links


M2000_INSIDE = ("inside an M2000 every IPU pair is joined by %d IPU-Links = %s B/s per direction, as "
                "configs/ipu-m2000.json [P,D,U: 16 GB/s per direction per link is published, the wiring "
                "inside an M2000 is not]" % (M2000_PAIR_LINKS, number(M2000_PAIR_LINKS * IPU_LINK_BYTES_PER_S)))
RAIL = ("between M2000s, IPU i of M2000 m is joined to IPU i of M2000 m+1 (the vertical IPU-Link rails of "
        "the rack) and the top M2000 wraps to the bottom, closing a ring per IPU column "
        "(docs/reference/ipu-hardware.md: "
        "GCL rings run up one side of the IPU-Link mesh and wrap at the top) [P,U: the exact cabling is "
        "not given]; a rail is %d IPU-Link = %s B/s per direction [D,U]: an M2000 has 8 IPU-Link ports out "
        "(2 Tbps bidirectional = 125 Gbit/s = 15.6 GB/s per direction per port, i.e. one 16 GB/s IPU-Link "
        "each [P,D]), 8 ports / 4 IPUs = 2 per IPU, one up and one down; with the %d links per pair inside "
        "the M2000 that is 8 of a GC200's 10 IPU-Links; IPU-Link latency 1 us is an assumption [U]"
        % (RAIL_LINKS, number(RAIL_LINKS * IPU_LINK_BYTES_PER_S), M2000_PAIR_LINKS * 3))
HOST_SHARED = ("[P,D] one host link per M2000: its IPU-Gateway (100GbE RoCE, 2 ports) serves the 4 IPUs, so "
               "sharedBy 4; bandwidth and latency as configs/ipus/gc200.json (gc-hosttraffictest ~7.06 GB/s "
               "host to Gateway [P example], 5 us [U])")


# The machine a pod is built of: its config file, its name and its IPU's.
MK2 = ("ipu-m2000.json", "IPU-M2000", "GC200", "configs/ipu-m2000.json and configs/ipus/gc200.json")
BOW = ("bow-2000.json", "Bow-2000", "Bow", "configs/bow-2000.json, configs/ipu-m2000.json and configs/ipus/gc200.json")


def pod(m2000s, name, description_extra, machine=MK2):
    ipus = 4 * m2000s
    base, machine_name, ipu_name, figures = machine
    return {
        "extends": base,
        "name": name,
        "description": ("Graphcore %s: %d %s = %d %s IPUs. Machine m holds IPUs 4m..4m+3. %s "
                        "Generated by scripts/make_system_config.py; docs/systems.md draws it. "
                        "IPU, host-link and Streaming Memory figures come from %s."
                        % (name, m2000s, machine_name, ipus, ipu_name, description_extra, figures)),
        "ipuCount": ipus,
        "links": m2000_rack_links(m2000s),
        "hostLink": {"sharedBy": 4},
        "sources": {
            "/ipuCount": "[P] %s = %d %s x 4 %s IPUs" % (name, m2000s, machine_name, ipu_name),
            "/links": M2000_INSIDE + "; " + RAIL,
            "/hostLink/sharedBy": HOST_SHARED,
        },
    }


def pod16(machine=MK2, name="IPU-POD16"):
    return pod(4, name,
               "IPU-Links: every pair inside a machine joined; IPU i of machine m joined to IPU i of machine "
               "(m+1) mod 4, so each IPU column is a ring of 4 machines.", machine)


def pod64(machine=MK2, name="IPU-POD64"):
    config = pod(16, name,
                 "IPU-Links: a 2D torus 4 x 16 - one dimension the 4 IPUs of a machine (every pair joined, "
                 "a superset of a ring of 4), the other the 16 machines of the rack (IPU i of machine m joined "
                 "to IPU i of machine (m+1) mod 16, a ring of 16 per IPU column).", machine)
    config["sources"]["/links"] = ("[P] %s = 16 machines in a 2D-torus IPU-Link topology; ipusim builds "
                                   "the torus as 4 (IPUs of a machine) x 16 (machines): " % name +
                                   M2000_INSIDE + "; " + RAIL)
    return config


def racks(count, name, machine=MK2):
    """`count` POD64 racks joined over GW-Links: two racks directly, more in a ring of racks."""
    m2000s = 16
    base, machine_name, ipu_name, figures = machine
    links = []
    for r in range(count):
        links += m2000_rack_links(m2000s, first_ipu=64 * r)
    # Each M2000's 2 GW-Links: both towards the other rack of a pair, one towards each neighbour in a ring.
    per_neighbour = GW_LINKS_PER_M2000 if count == 2 else GW_LINKS_PER_M2000 / 2
    gw_bw = per_neighbour * GW_LINK_BYTES_PER_S / 4
    for r in range(count if count > 2 else 1):
        nxt = (r + 1) % count
        for m in range(m2000s):
            for i in range(4):
                a, b = 64 * r + 4 * m + i, 64 * nxt + 4 * m + i
                label = "gw-link-m%d" % m if count == 2 else "gw-link-r%d-m%d" % (r, m)
                links.append(link(min(a, b), max(a, b), gw_bw, GW_LINK_LATENCY_S, label))
    ring = ("IPU i of machine m in rack 0 is joined to IPU i of machine m in rack 1 by a link named gw-link-m<m> "
            "carrying a quarter of that machine's 2 GW-Links (100GbE)" if count == 2 else
            "the racks form a ring: IPU i of machine m in rack r is joined to IPU i of machine m in rack r+1 "
            "(mod %d) by a link named gw-link-r<r>-m<m> carrying a quarter of one of that machine's 2 GW-Links "
            "(100GbE; the other goes to the rack on the other side)" % count)
    return {
        "extends": base,
        "name": name,
        "description": ("Graphcore %s: %d POD64 racks (%d %s = %d %s IPUs) joined over GW-Links. Rack r, "
                        "machine m holds IPUs 64r+4m..64r+4m+3. Each rack is the POD64 torus; %s. Generated by "
                        "scripts/make_system_config.py; docs/systems.md draws it."
                        % (name, count, m2000s * count, machine_name, 64 * count, ipu_name, ring)),
        "ipuCount": 64 * count,
        "rackIpus": 64,
        "links": links,
        "hostLink": {"sharedBy": 4},
        "sources": {
            "/ipuCount": "[P] %s = %d POD64 racks = %d %s x 4 %s IPUs" % (name, count, m2000s * count,
                                                                       machine_name, ipu_name),
            "/rackIpus": ("[P] a POD64 rack (64 IPUs) is one IPU-Link domain; racks are joined over GW-Links, "
                          "so gradient collectives reduce within each rack first, then across racks (GCL)"),
            "/links": ("within each rack as configs/ipu-pod64.json: " + M2000_INSIDE + "; " + RAIL +
                       ". Between racks [P,D,U]: a machine has 2 GW-Links (100GbE, 400 Gbps bidirectional in all) "
                       "to other racks [P] = 2 x 12.5 GB/s = 25 GB/s per direction per machine [D]; the traffic "
                       "really passes IPU -> IPU-Gateway -> 100GbE -> IPU-Gateway -> IPU, which ipusim cannot "
                       "model as a node, so a machine's GW-Link bandwidth towards a rack is split evenly as 4 "
                       "links of %s B/s per direction, one per IPU [U: a single IPU's cross-rack stream gets a "
                       "quarter of it, never all; concurrent streams of the 4 IPUs get their fair share]; "
                       "GW-Link latency 5 us is an assumption as the RoCE host link's [U]" % number(gw_bw)),
            "/hostLink/sharedBy": HOST_SHARED,
        },
    }


def pod128():
    return racks(2, "IPU-POD128")


def dss8440():
    cards = 8
    rung_bw = MK1_RUNG_LINKS * MK1_LINK_BYTES_PER_S * MK1_LINK_EFFICIENCY
    rail_bw = MK1_RAIL_LINKS * MK1_LINK_BYTES_PER_S * MK1_LINK_EFFICIENCY
    links = []
    for c in range(cards):
        links.append(link(2 * c, 2 * c + 1, rung_bw, IPU_LINK_LATENCY_S))
    for c in range(cards - 1):
        for side in range(2):
            links.append(link(2 * c + side, 2 * (c + 1) + side, rail_bw, IPU_LINK_LATENCY_S))
    return {
        "extends": "ipus/gc2.json",
        "name": "DSS8440 (8 x C2)",
        "description": ("Dell DSS8440 server with 8 Graphcore C2 cards = 16 GC2 (Mk1) IPUs in an IPU-Link ladder "
                        "(not a torus): card c holds IPUs 2c and 2c+1; a rung joins the two IPUs of a card; two "
                        "rails join IPU 2c+s to IPU 2c+2+s (s = 0, 1) card to card, with no wrap from card 7 to "
                        "card 0. Host over each IPU's own PCIe x8 (configs/ipus/gc2.json). Generated by "
                        "scripts/make_system_config.py; docs/systems.md draws it."),
        "ipuCount": 2 * cards,
        "links": links,
        "sources": {
            "/ipuCount": "[P] DSS8440 with 8 C2 cards, 2 GC2 IPUs per card",
            "/links": ("[P,D] ladder as Graphcore's own multi-IPU model in poplibs encodes it: 128 Gbit/s per "
                       "link at 0.85 efficiency = %s B/s per direction per link [D]; per IPU 4 links within "
                       "the card and 2 cross-rung, 2 up, 2 down (10 = all of a GC2's IPU-Links). ipusim reads "
                       "the 4 within-card and 2 cross-rung links as all joining the card's two IPUs (6 links = "
                       "96 GB/s raw per direction, matching the published 3 x 64 GB/s bidirectional between "
                       "the card's IPUs [P]) and 2 links per rail (4 links = 64 GB/s raw per direction card to "
                       "card, matching the published 128 GB/s card to card [P]) [U: the reading of "
                       "'cross-rung']: rung %s B/s, rail %s B/s per direction after the 0.85 [D]; no wrap "
                       "from the top card to the bottom (a ladder, not a torus) [P]; link latency 1 us is an "
                       "assumption [U], as configs/ipu-m2000.json"
                       % (number(MK1_LINK_BYTES_PER_S * MK1_LINK_EFFICIENCY), number(rung_bw), number(rail_bw))),
            "/hostLink": ("[P,D] PCIe x8 per IPU [P], each IPU its own link (sharedBy 1): the DSS8440 is a PCIe "
                          "Gen3 server, 8 lanes x 8 GT/s x 128/130 / 8 = 7.88 GB/s per direction [D], as "
                          "configs/ipus/gc2.json; 5 us latency is an assumption [U]"),
        },
    }


SYSTEMS = {
    "pod16": ("ipu-pod16.json", pod16),
    "pod64": ("ipu-pod64.json", pod64),
    "pod128": ("ipu-pod128.json", pod128),
    "pod256": ("ipu-pod256.json", lambda: racks(4, "IPU-POD256")),
    "bow-pod16": ("bow-pod16.json", lambda: pod16(BOW, "Bow Pod16")),
    "bow-pod64": ("bow-pod64.json", lambda: pod64(BOW, "Bow Pod64")),
    "bow-pod128": ("bow-pod128.json", lambda: racks(2, "Bow Pod128", BOW)),
    "bow-pod256": ("bow-pod256.json", lambda: racks(4, "Bow Pod256", BOW)),
    "dss8440-c2": ("dss8440-c2.json", dss8440),
}


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(
        description="Generate ipusim multi-IPU system configs (IPU-POD16/64/128, DSS8440 with C2 cards). "
                    "Output is deterministic; see docs/systems.md for each topology.")
    parser.add_argument("systems", nargs="*", metavar="SYSTEM",
                        help="systems to generate: %s (default: all)" % ", ".join(SYSTEMS))
    parser.add_argument("--out-dir", default=os.path.join(here, os.pardir, "configs"),
                        help="directory to write into (default: the repository's configs/)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if any file in --out-dir differs from what would be generated")
    args = parser.parse_args(argv)
    chosen = args.systems or list(SYSTEMS)
    for s in chosen:
        if s not in SYSTEMS:
            parser.error("unknown system %r (choose from %s)" % (s, ", ".join(SYSTEMS)))
    stale = []
    for s in chosen:
        file_name, build = SYSTEMS[s]
        path = os.path.normpath(os.path.join(args.out_dir, file_name))
        text = render(build())
        if args.check:
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except OSError:
                current = None
            if current != text:
                stale.append(path)
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(path)
    if stale:
        for path in stale:
            print("out of date: %s (run scripts/make_system_config.py)" % path, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
