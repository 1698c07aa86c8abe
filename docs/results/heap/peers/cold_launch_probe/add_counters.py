import sys
v=sys.argv[1]
base=f'{v}/heap/include/manyalloc/heap/detail/slabs/'
p=base+'invariants.hpp'; s=open(p).read()
s=s.replace('namespace manyalloc::heap::detail::slabs {\n','namespace manyalloc::heap::detail::slabs {\n__device__ unsigned long long probe_counters[16];\n#define PROBE(i, n) do { if constexpr (Acc::warp_size == 32) atomicAdd(&::manyalloc::heap::detail::slabs::probe_counters[i], (unsigned long long)(n)); } while (0)\n',1)
open(p,'w').write(s)
p=base+'class_slots.hpp'; s=open(p).read()
def rep(a,b):
    global s
    assert a in s, a
    s=s.replace(a,b,1)
rep('    const std::uint32_t start = hash_start(h, cls * 977u + shard, seen.generation);\n',
    '    const std::uint32_t start = hash_start(h, cls * 977u + shard, seen.generation);\n    PROBE(0, 1);\n    long long probe_t0 = 0;\n#ifdef __CUDA_ARCH__\n    probe_t0 = clock64();\n#endif\n')
rep('    if (page == no_page) {\n      page = PagePool::claim_in_word(acc, h, 1u, start);','    if (page == no_page) {\n      PROBE(1, 1);\n      page = PagePool::claim_in_word(acc, h, 1u, start);')
rep('      std::uint64_t now = 0;\n','      std::uint64_t now = 0;\n      PROBE(3, 1);\n')
rep('        acc.relax();\n','        acc.relax();\n        PROBE(4, 1);\n')
rep('    acc.atomic_exch64(slot, next.encode());\n    return page != no_page;','    acc.atomic_exch64(slot, next.encode());\n#ifdef __CUDA_ARCH__\n    PROBE(9, clock64() - probe_t0);\n#endif\n    return page != no_page;')
open(p,'w').write(s)
p=base+'page_pool.hpp'; s=open(p).read()
rep('        const std::uint32_t page = try_word(acc, h, w, k, limit);\n        if (page != no_page) return page;\n        ++seen;','        PROBE(2, 1);\n        const std::uint32_t page = try_word(acc, h, w, k, limit);\n        if (page != no_page) return page;\n        ++seen;')
rep('      // Lost some pages to another claim: give back the ones we set.\n','      PROBE(5, 1);\n      // Lost some pages to another claim: give back the ones we set.\n')
open(p,'w').write(s)
