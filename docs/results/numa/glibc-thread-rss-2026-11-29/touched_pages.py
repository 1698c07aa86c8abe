#!/usr/bin/env python3
"""Resident 4 KiB pages of a running process's small segments, per 32 KiB
run page (the numa allocator's page, numa/src/invariants.hpp).

  touched_pages.py PID

For every anonymous mapping of 16 MiB or more (the source's segments), one
line per 2 MiB segment: its resident KiB and one digit per 32 KiB page,
the number of its 4 KiB pages that are resident ('#' for all 8). Reads
/proc/PID/pagemap (present bit), so it needs to run as the process's user
or root.
"""
import struct
import sys

SEGMENT = 2 << 20
OS_PAGE = 4096
RUN_PAGE = 32 << 10


def main() -> None:
    pid = int(sys.argv[1])
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read().splitlines()
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            begin, end = (int(x, 16) for x in fields[0].split("-"))
            if end - begin < (16 << 20) or len(fields) > 5:  # named mappings are files
                continue
            print(f"mapping {begin:#x} {(end - begin) >> 20} MiB")
            for seg in range((begin + SEGMENT - 1) // SEGMENT * SEGMENT, end, SEGMENT):
                pagemap.seek(seg // OS_PAGE * 8)
                data = pagemap.read(SEGMENT // OS_PAGE * 8)
                present = [(struct.unpack_from("<Q", data, i * 8)[0] >> 63) & 1 for i in range(SEGMENT // OS_PAGE)]
                per = RUN_PAGE // OS_PAGE
                counts = [sum(present[j * per:(j + 1) * per]) for j in range(SEGMENT // RUN_PAGE)]
                digits = "".join(str(c) if c < per else "#" for c in counts)
                print(f"{seg:#x} {sum(present) * OS_PAGE >> 10:5d} KiB {digits}")


if __name__ == "__main__":
    main()
