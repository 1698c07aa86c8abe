"""Instruments a copy of the Scatter headers with event counters (probe only).

  python3 add_counters.py TREE   # TREE: a copy of the repository (heap/include under it)

Counter i is incremented by the GPU lanes at the places below; churn_probe.cu
built with -DPROBE against TREE prints them per request.
"""
import sys

tree = sys.argv[1]
base = f'{tree}/heap/include/manyalloc/heap/detail/scatter/'
NAMES = ['allocs', 'pages tried', 'region words read', 'reservations', 'reservations failed',
         'claims tried', 'claim waits (spins)', 'bit walks', 'pages filled', 'blocks searched',
         'last-resort searches', 'activations tried', 'block samples', 'pages of another size']


def edit(path, pairs):
    s = open(path).read()
    for a, b in pairs:
        assert a in s, (path, a)
        s = s.replace(a, b, 1)
    open(path, 'w').write(s)


edit(base + 'invariants.hpp', [(
    'namespace manyalloc::heap::detail {\n',
    'namespace manyalloc::heap::detail {\n__device__ unsigned long long probe_counters[16];\n'
    '#define PROBE(i) do { if constexpr (Acc::warp_size == 32) '
    'atomicAdd(&::manyalloc::heap::detail::probe_counters[i], 1ull); } while (0)\n')])
edit(base + 'search.hpp', [
    ('  MANYALLOC_FN static void* alloc(const Acc& acc, const HeapLayout& h, std::uint32_t request, std::uint32_t same) {\n',
     '  MANYALLOC_FN static void* alloc(const Acc& acc, const HeapLayout& h, std::uint32_t request, std::uint32_t same) {\n    PROBE(0);\n'),
    ('                                     std::uint32_t max_chunk) {\n',
     '                                     std::uint32_t max_chunk) {\n    PROBE(1);\n'),
    ('    if (chunk != 0u) return nullptr;\n', '    if (chunk != 0u) { PROBE(13); return nullptr; }\n'),
    ('      const std::uint32_t marks = bits::popcount(acc.load(&h.regions[block_first / regionsize + region]));\n',
     '      const std::uint32_t marks = bits::popcount(acc.load(&h.regions[block_first / regionsize + region]));\n      PROBE(2);\n'),
    ('    full = false;\n', '    full = false;\n    PROBE(9);\n'),
    ('      if (void* mem = search_block(acc, h, block, start, request, Pass::skip_only_full, full)) return mem;\n',
     '      PROBE(10);\n      if (void* mem = search_block(acc, h, block, start, request, Pass::skip_only_full, full)) return mem;\n'),
    ('    const std::uint32_t block = h.block_of(page);\n', '    PROBE(11);\n    const std::uint32_t block = h.block_of(page);\n'),
    ('    const std::uint32_t regions = h.regions_in_block(block, regionsize);\n    const std::uint32_t* words',
     '    PROBE(12);\n    const std::uint32_t regions = h.regions_in_block(block, regionsize);\n    const std::uint32_t* words'),
])
edit(base + 'page_ops.hpp', [
    ('    const std::uint32_t reserved = acc.atomic_add(&e.fill, 1u);\n',
     '    PROBE(3);\n    const std::uint32_t reserved = acc.atomic_add(&e.fill, 1u);\n    if (reserved >= g.chunks) PROBE(4);\n'),
    ('    if (acc.atomic_cas(&e.fill, 0u, page_locked) != 0u) return wait_for_claim(acc, e);\n',
     '    PROBE(5);\n    if (acc.atomic_cas(&e.fill, 0u, page_locked) != 0u) return wait_for_claim(acc, e);\n'),
    ('      acc.relax();\n', '      acc.relax();\n      PROBE(6);\n'),
    ('      spot = next == chunks ? (spot + 1u) % chunks : next;\n',
     '      spot = next == chunks ? (spot + 1u) % chunks : next;\n      PROBE(7);\n'),
    ('        const std::uint32_t next = bits::next_free_spot(old, spot, n);\n',
     '        PROBE(7);\n        const std::uint32_t next = bits::next_free_spot(old, spot, n);\n'),
    ('    const std::uint32_t old = acc.atomic_or(word, bit);\n    if (chunks == 0u) return;\n',
     '    PROBE(8);\n    const std::uint32_t old = acc.atomic_or(word, bit);\n    if (chunks == 0u) return;\n'),
])
open(f'{tree}/probe_counter_names.txt', 'w').write('\n'.join(NAMES) + '\n')
