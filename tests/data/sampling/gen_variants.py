#!/usr/bin/env python3
"""Writes the hand-made npu-smi / nvidia-smi variants next to the captured fixtures.

The captured files (npu_smi_info_910B2C_with_procs.txt, npu_smi_t_*.txt,
nvidia_smi_query_csv_rtxpro6000.txt) are real tool output. The variants below
are built from the same layout rules (cells padded to fixed widths, values
starting under their header label, used/total printed as "%-5d/ %d") to cover
what one captured machine cannot: eight cards, five-digit memory, 310P Duo
cards without HBM and with "NA" cells, another driver's column layout,
missing columns, truncation and CRLF line ends.

Run it from anywhere; it rewrites the variant files in its own directory.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def cell(width, items):
    """A cell `width` wide with each (column, text) placed at its column."""
    chars = [" "] * width
    for col, text in items:
        for i, ch in enumerate(text):
            if col + i >= width:
                raise ValueError(f"{text!r} overflows a {width}-wide cell")
            chars[col + i] = ch
    return "".join(chars)


def row(widths, cells):
    return "|" + "|".join(cell(w, items) for w, items in zip(widths, cells)) + "|"


def rule(widths, ch="-"):
    return "+" + "+".join(ch * w for w in widths) + "+"


def banner(widths, version):
    inner = sum(widths) + len(widths) - 1
    text = cell(inner, [(1, f"npu-smi {version}"), (34 if inner < 100 else 50, f"Version: {version}")])
    return ["+" + "-" * inner + "+", "|" + text + "|"]


def mem(used, total):
    return f"{used:<5}/ {total}"


# --- 910B, eight cards (Atlas 800T A2 style), busy: five-digit HBM use ---
W910 = [27, 15, 52]


def table_910b(cards, version="23.0.6", procs=None):
    lines = banner(W910, version)
    lines.append(rule(W910))
    lines.append(row(W910, [[(1, "NPU"), (7, "Name")], [(1, "Health")],
                            [(1, "Power(W)"), (13, "Temp(C)"), (31, "Hugepages-Usage(page)")]]))
    lines.append(row(W910, [[(1, "Chip")], [(1, "Bus-Id")],
                            [(1, "AICore(%)"), (13, "Memory-Usage(MB)"), (31, "HBM-Usage(MB)")]]))
    lines.append(rule(W910, "="))
    for c in cards:
        lines.append(row(W910, [[(1, str(c["npu"])), (7, c["name"])], [(1, c["health"])],
                                [(1, c["power"]), (13, c["temp"]), (31, mem(0, 0))]]))
        lines.append(row(W910, [[(1, "0")], [(1, c["bus"])],
                                [(1, c["aicore"]), (13, mem(0, 0)), (31, mem(c["hbm"], 65536))]]))
        lines.append(rule(W910, "="))
    lines.append(rule(W910))
    wp = [27, 15, 26, 25]
    lines.append(row(wp, [[(1, "NPU"), (9, "Chip")], [(1, "Process id")], [(1, "Process name")],
                          [(1, "Process memory(MB)")]]))
    lines.append(rule(W910, "="))
    for p in procs or []:
        if "pid" in p:
            lines.append(row(wp, [[(1, str(p["npu"])), (9, "0")], [(1, str(p["pid"]))], [(1, p["name"])],
                                  [(1, str(p["mb"]))]]))
        else:
            lines.append("|" + cell(sum(W910) + 2, [(1, f"No running processes found in NPU {p['npu']}")]) + "|")
        lines.append(rule(W910, "="))
    lines[-1] = rule(W910)
    return "\n".join(lines) + "\n"


BUSY_HBM = [59985, 60012, 59871, 61234, 59990, 60001, 59985, 58765]
BUS_8 = ["C1", "01", "41", "81", "C2", "02", "42", "82"]
CARDS_8 = [
    {"npu": i, "name": "910B3", "health": "OK", "power": f"{300 + 7.5 * i:.1f}", "temp": str(48 + i),
     "bus": f"0000:{BUS_8[i]}:00.0", "aicore": str(90 + i), "hbm": BUSY_HBM[i]}
    for i in range(8)
]
PROCS_8 = [{"npu": i, "pid": 2913211 + i, "name": "python3", "mb": 56573 + i} for i in range(8)]

# --- 310P3 Duo cards: two chips per NPU, no HBM column, "NA" power and Bus-Id ---
W310 = [31, 17, 54]


def table_310p():
    lines = banner(W310, "23.0.0")
    lines.append(rule(W310))
    lines.append(row(W310, [[(1, "NPU"), (9, "Name")], [(1, "Health")],
                            [(1, "Power(W)"), (14, "Temp(C)"), (32, "Hugepages-Usage(page)")]]))
    lines.append(row(W310, [[(1, "Chip"), (9, "Device")], [(1, "Bus-Id")],
                            [(1, "AICore(%)"), (14, "Memory-Usage(MB)")]]))
    lines.append(rule(W310, "="))
    npus = [(1, "OK", "53", [(0, 0, "0", 1528, 44280), (1, 1, "12", 1338, 43693)]),
            (2, "Warning", "49", [(0, 2, "0", 1612, 44280), (1, 3, "NA", 1610, 43693)])]
    for npu, health, temp, chips in npus:
        lines.append(row(W310, [[(1, str(npu)), (9, "310P3")], [(1, health)],
                                [(1, "NA"), (14, temp), (32, mem(0, 0))]]))
        for chip, device, aicore, used, total in chips:
            lines.append(row(W310, [[(1, str(chip)), (9, str(device))], [(1, "NA")],
                                    [(1, aicore), (14, mem(used, total))]]))
        lines.append(rule(W310, "="))
    lines.append(rule(W310))
    wp = [31, 17, 26, 27]
    lines.append(row(wp, [[(1, "NPU"), (9, "Chip")], [(1, "Process id")], [(1, "Process name")],
                          [(1, "Process memory(MB)")]]))
    lines.append(rule(W310, "="))
    for npu in (1, 2):
        lines.append("|" + cell(sum(W310) + 2, [(1, f"No running processes found in NPU {npu}")]) + "|")
        lines.append(rule(W310, "="))
    lines[-1] = rule(W310)
    return "\n".join(lines) + "\n"


# --- another driver's layout: wider cells, columns in another order, an extra column ---
WOTH = [24, 20, 74]


def table_other_layout():
    lines = banner(WOTH, "24.1.rc3")
    lines.append(rule(WOTH))
    lines.append(row(WOTH, [[(1, "NPU"), (8, "Name")], [(1, "Health")],
                            [(1, "Temp(C)"), (12, "Power(W)"), (24, "Hugepages-Usage(page)"), (50, "Fan(RPM)")]]))
    lines.append(row(WOTH, [[(1, "Chip")], [(1, "Bus-Id")],
                            [(1, "HBM-Usage(MB)"), (24, "Memory-Usage(MB)"), (44, "AICore(%)")]]))
    lines.append(rule(WOTH, "="))
    for npu, temp, power, hbm, aicore in [(4, "61", "345.2", 12345, "77"), (5, "59", "338.9", 65000, "100")]:
        lines.append(row(WOTH, [[(1, str(npu)), (8, "910B4")], [(1, "OK")],
                                [(1, temp), (12, power), (24, mem(0, 0)), (50, "5400")]]))
        lines.append(row(WOTH, [[(1, "0")], [(1, f"0000:{npu:02X}:00.0")],
                                [(1, mem(hbm, 65536)), (24, mem(0, 0)), (44, aicore)]]))
        lines.append(rule(WOTH, "="))
    return "\n".join(lines) + "\n"


# --- columns missing from the header, and blank / NA cells in the rows ---
def table_missing_columns():
    lines = banner(W910, "22.0.4")
    lines.append(rule(W910))
    lines.append(row(W910, [[(1, "NPU"), (7, "Name")], [(1, "Health")], [(13, "Temp(C)")]]))
    lines.append(row(W910, [[(1, "Chip")], [(1, "Bus-Id")], [(1, "AICore(%)"), (31, "HBM-Usage(MB)")]]))
    lines.append(rule(W910, "="))
    # NPU 0: everything its header has. NPU 1: blank AICore, NA temperature.
    lines.append(row(W910, [[(1, "0"), (7, "910B1")], [(1, "OK")], [(13, "44")]]))
    lines.append(row(W910, [[(1, "0")], [(1, "0000:01:00.0")], [(1, "3"), (31, mem(2048, 65536))]]))
    lines.append(rule(W910, "="))
    lines.append(row(W910, [[(1, "1"), (7, "910B1")], [(1, "Alarm")], [(13, "NA")]]))
    lines.append(row(W910, [[(1, "0")], [(1, "0000:02:00.0")], [(31, mem(4096, 65536))]]))
    lines.append(rule(W910, "="))
    return "\n".join(lines) + "\n"


def main():
    eight = table_910b(CARDS_8, procs=PROCS_8)
    (HERE / "npu_smi_info_910B3_8card.txt").write_text(eight)
    # Cut in the middle of NPU 2's chip row, as a timed-out capture would be.
    cut = eight.index("| 0                         | 0000:41:00.0")
    (HERE / "npu_smi_info_910B3_truncated.txt").write_text(eight[: cut + 40])
    (HERE / "npu_smi_info_310P3_duo.txt").write_text(table_310p())
    (HERE / "npu_smi_info_other_layout.txt").write_text(table_other_layout())
    (HERE / "npu_smi_info_missing_columns.txt").write_text(table_missing_columns())
    one = table_910b([{"npu": 0, "name": "910B2C", "health": "OK", "power": "72.1", "temp": "40",
                       "bus": "0000:5A:00.0", "aicore": "0", "hbm": 3385}], version="23.0.2.1",
                     procs=[{"npu": 0}])
    (HERE / "npu_smi_info_910B2C_idle_crlf.txt").write_bytes(one.replace("\n", "\r\n").encode())

    # A newer driver's `-t common`: extra keys, CRLF, and the MCU block not
    # separated by a blank line.
    common = [
        "        NPU ID                         : 3",
        "        Chip Count                     : 1",
        "",
        "        Chip ID                        : 0",
        "        Memory Usage Rate(%)           : 0",
        "        HBM Usage Rate(%)              : 91",
        "        Aicore Usage Rate(%)           : 97",
        "        Aicube Usage Rate(%)           : 88",
        "        NPU Utilization(%)             : 95",
        "        Aicore Freq(MHZ)               : 1800",
        "        Aicore curFreq(MHZ)            : 1650",
        "        Aicore Count                   : 20",
        "        Some Future Key(unit)          : 12",
        "        Temperature(C)                 : 63",
        "        NPU Real-time Power(W)         : 351.7",
        "        Chip Name                      : mcu",
        "        Temperature(C)                 : 41",
    ]
    (HERE / "npu_smi_t_common_newer_driver.txt").write_bytes(("\r\n".join(common) + "\r\n").encode())

    # nvidia-smi --query-gpu=<nvidia_fields()> --format=csv,noheader,nounits on two GPUs,
    # the second without power and memory-clock readings.
    nv = [
        "97, 41, 80123, 97887, 71, 563.20, 2617, 14001",
        "0, 0, 1, 81559, 34, [N/A], 345, [Not Supported]",
    ]
    (HERE / "nvidia_smi_noheader_nounits_2gpu.txt").write_text("\n".join(nv) + "\n")


if __name__ == "__main__":
    main()
