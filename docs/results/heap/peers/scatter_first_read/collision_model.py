#!/usr/bin/env python3
"""Where the lanes of a cold mixed-size launch start, and how far they walk.

A model, not a measurement: the probe's 2^17 lanes (mixed sizes, 16 B-4 KiB
by a hash of the thread index, rounded up to 16 B as AlignmentPolicies::Shrink<16>
does) each hash to a start page of one access block (16 GiB heap, 4 KiB pages,
8 blocks), and take the first page from there that is clean or already split
for a chunk size they may use (request..2x request) with a chunk left. Lanes are
replayed one after the other in warp order. Prints, for our hash
(detail/scatter/search.hpp) and for upstream mallocMC 2.6.0's (its start page
from size, multiprocessor and hardware warp slot), how many lanes walked how
many pages, and which kinds of request met on the first page (whole-page
requests are those above half a page).
  python3 collision_model.py
"""
import collections

PAGESIZE = 4096
THREADS = 1 << 17
PAGES_PER_BLOCK = (16 << 30) // PAGESIZE // 8
HASHING_K, DIST_MP = 38183, 17497
SMS, WARPS_PER_BLOCK = 132, 8  # H200; blocks of 256 threads


def chunks(size):
    """page_geometry(4096, size).chunks"""
    threshold = (PAGESIZE - 8) // 33
    if size > threshold:
        return min(PAGESIZE // size, 32)
    segment = size * 32 + 4
    full = PAGESIZE // segment
    if full >= 32:
        return 1024
    used = full * segment + 4
    return full * 32 + ((PAGESIZE - used) // size if used < PAGESIZE else 0)


def probe_size(i):
    x = (i * 2654435761) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 2246822519) & 0xFFFFFFFF
    x ^= x >> 13
    return (16 + x % 4081 + 15) // 16 * 16


SIZES = [probe_size(i) for i in range(THREADS)]


def ours(whole_step=None):
    """whole_step: for whole-page requests, one base for every size and warps
    whole_step pages apart (a variant; None: the hash as it is)."""
    start = {}
    for w in range(THREADS // 32):
        lanes = SIZES[w * 32:(w + 1) * 32]
        for lane, size in enumerate(lanes):
            same = [j for j, s in enumerate(lanes) if s == size]
            c = chunks(size)
            whole = c == 1
            asking = 32 if whole else len(same)
            rank = lane if whole else same.index(lane)
            if whole and whole_step is not None:
                start[w, lane] = (PAGESIZE * HASHING_K + w * whole_step + lane) % PAGES_PER_BLOCK
            else:
                start[w, lane] = (size * HASHING_K + w * (1 + asking // c) + rank // c) % PAGES_PER_BLOCK
    return start


def upstream():
    start = {}
    for w in range(THREADS // 32):
        block = w // WARPS_PER_BLOCK
        sm, slot = block % SMS, (block // SMS) * WARPS_PER_BLOCK + w % WARPS_PER_BLOCK
        for lane in range(32):
            size = SIZES[w * 32 + lane]
            reloff = 32 * size // PAGESIZE
            start[w, lane] = (size * HASHING_K + DIST_MP * sm + (1 + reloff) * slot) % PAGES_PER_BLOCK
    return start


def replay(start):
    pages = {}  # page -> [chunk size, chunks taken]
    walks, met = collections.Counter(), collections.Counter()
    warps_walking = 0
    for w in range(THREADS // 32):
        walked_in_warp = False
        for lane in range(32):
            size, page, steps = SIZES[w * 32 + lane], start[w, lane], 0
            while True:
                used = pages.get(page)
                if used is None:
                    pages[page] = [size, 1]
                    break
                if size <= used[0] <= 2 * size and used[1] < chunks(used[0]):
                    used[1] += 1
                    break
                if steps == 0:
                    met[(size > PAGESIZE // 2, used[0] > PAGESIZE // 2)] += 1
                page, steps = (page + 1) % PAGES_PER_BLOCK, steps + 1
            walks[steps] += 1
            walked_in_warp = walked_in_warp or steps > 0
        warps_walking += walked_in_warp
    return walks, met, warps_walking


variants = (("ours", ours), ("upstream", upstream), ("ours, whole pages on one base, 33 per warp", lambda: ours(33)),
            ("ours, whole pages on one base, 32 per warp", lambda: ours(32)))
for name, hash_of in variants:
    walks, met, warps_walking = replay(hash_of())
    walked = THREADS - walks[0]
    print(f"{name}: {walked} lanes walked ({walked / THREADS:.1%}), longest walk {max(walks)} pages, "
          f"warps holding a lane that walked {warps_walking / (THREADS // 32):.1%}; walks {dict(sorted(walks.items()))}")
    print(f"  first page met (lane whole-page, page whole-page): {dict(met)}")
