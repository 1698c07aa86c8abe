/* manyalloc node allocator: public interface (C and C++).
 *
 * Linking with libmanyalloc-numa.so (or LD_PRELOAD-ing it) replaces malloc,
 * free, calloc, realloc, reallocarray, memalign, posix_memalign,
 * aligned_alloc, valloc, pvalloc, malloc_usable_size and C++ new/delete.
 * This header adds:
 *   - the same functions under manyalloc_numa_* names, which always reach
 *     this allocator (even when another malloc was interposed first, e.g. by
 *     a sanitizer runtime);
 *   - the NUMA calls of the MPC allocator design (allocate on a node,
 *     migrate a thread's heap after the thread moved);
 *   - statistics, queryable and printable.
 * Runtime options come from MANYALLOC_NUMA_* environment variables, see
 * numa/README.md.
 */
#ifndef MANYALLOC_NUMA_NUMA_H
#define MANYALLOC_NUMA_NUMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define MANYALLOC_NUMA_NOEXCEPT noexcept
#else
#define MANYALLOC_NUMA_NOEXCEPT
#endif

/* The C allocator interface under its own names. Semantics are those of
 * glibc: realloc(p, 0) with p != NULL frees p and returns NULL;
 * malloc(0) returns a unique pointer; errno is ENOMEM on failure. */
void* manyalloc_numa_malloc(size_t size) MANYALLOC_NUMA_NOEXCEPT;
void manyalloc_numa_free(void* p) MANYALLOC_NUMA_NOEXCEPT;
void* manyalloc_numa_calloc(size_t n, size_t size) MANYALLOC_NUMA_NOEXCEPT;
void* manyalloc_numa_realloc(void* p, size_t size) MANYALLOC_NUMA_NOEXCEPT;
void* manyalloc_numa_reallocarray(void* p, size_t n, size_t size) MANYALLOC_NUMA_NOEXCEPT;
void* manyalloc_numa_memalign(size_t alignment, size_t size) MANYALLOC_NUMA_NOEXCEPT;
int manyalloc_numa_posix_memalign(void** out, size_t alignment, size_t size) MANYALLOC_NUMA_NOEXCEPT;
void* manyalloc_numa_aligned_alloc(size_t alignment, size_t size) MANYALLOC_NUMA_NOEXCEPT;
void* manyalloc_numa_valloc(size_t size) MANYALLOC_NUMA_NOEXCEPT;
void* manyalloc_numa_pvalloc(size_t size) MANYALLOC_NUMA_NOEXCEPT;
size_t manyalloc_numa_usable_size(void* p) MANYALLOC_NUMA_NOEXCEPT;

/* 1 when p is the start of a live allocation of this allocator. For a small
 * chunk owned by another thread's heap the answer is only "p is the start of
 * a chunk in a live run" (that heap's free bitmap is private to it); a chunk
 * that another thread freed counts as live until that thread publishes the
 * free (remote frees are gathered, see numa/README.md). */
int manyalloc_numa_owns(const void* p) MANYALLOC_NUMA_NOEXCEPT;

/* ---- NUMA ---------------------------------------------------------------- */

/* Number of NUMA nodes (loads the hwloc topology on first call). */
int manyalloc_numa_node_count(void) MANYALLOC_NUMA_NOEXCEPT;

/* Allocates `size` bytes from the memory source of `node`, with the pages
 * bound to that node (when the topology is this machine's). Served by a
 * dedicated large segment (2 MiB of address space at least): meant for
 * arrays. Free with free(). NULL + EINVAL for a bad node. */
void* manyalloc_numa_malloc_onnode(size_t size, int node) MANYALLOC_NUMA_NOEXCEPT;

/* Node whose source serves the calling thread's heap, -1 for the common one. */
int manyalloc_numa_thread_node(void) MANYALLOC_NUMA_NOEXCEPT;

/* After the calling thread moved (or was bound) to `node`: its heap takes
 * new memory from that node's source and the pages of its current segments
 * are migrated there. node == -1 selects the common source (no migration).
 * Returns 0, or -1 with errno EINVAL for a bad node. */
int manyalloc_numa_thread_migrate(int node) MANYALLOC_NUMA_NOEXCEPT;

/* Same, with the node derived from the thread's current CPU binding (the
 * common source when the binding spans several nodes). Returns the node. */
int manyalloc_numa_thread_rebind(void) MANYALLOC_NUMA_NOEXCEPT;

/* ---- statistics ---------------------------------------------------------- */

#define MANYALLOC_NUMA_MAX_SOURCES 65

struct manyalloc_numa_source_stats {
  int node;                  /* -1: common source */
  uint64_t mapped_bytes;     /* segments currently mapped from the OS */
  uint64_t cached_bytes;     /* of which free and kept for reuse */
  uint64_t large_in_use_bytes;
  uint64_t os_maps, os_unmaps, remaps; /* os_unmaps: whole segments of this source */
  uint64_t reuses;           /* segments served from the cache */
  uint64_t faults_avoided;   /* 4 KiB pages reused already touched */
};

struct manyalloc_numa_stats {
  const char* profile;       /* "lowmem", "uma" or "numa" */
  uint64_t in_use_bytes;     /* small + large (chunk sizes, not requests) */
  uint64_t small_in_use_bytes;
  uint64_t large_in_use_bytes;
  uint64_t mapped_bytes;     /* user segments, all sources */
  uint64_t cached_bytes;
  uint64_t metadata_bytes;   /* descriptors and registry */
  uint64_t remote_frees;     /* chunks freed by a thread other than the owner, merged */
  uint64_t remote_pending_bytes; /* of small_in_use_bytes: chunks freed by other threads and
                                    not yet merged by their owner (remote-free queues) */
  uint64_t idle_merges;      /* lowmem: remote-free queues merged by another thread for an
                                owner that was not allocating */
  uint64_t faults_avoided;
  uint64_t misuses;          /* double / invalid frees detected */
  /* Memory given back to the OS: every madvise(MADV_DONTNEED) and munmap
   * call the allocator made, whatever the path (numa/README.md, "Giving
   * memory back"). */
  uint64_t os_decommits;     /* madvise(MADV_DONTNEED) calls, all of them: */
  uint64_t purge_decommits;  /*   free pages inside runs (purges) */
  uint64_t idle_decommits;   /*   pages of empty runs (budget, decay, trim, segment given back) */
  uint64_t meta_decommits;   /*   descriptor pages of freed segments */
  uint64_t decommitted_bytes;
  uint64_t os_unmaps;        /* munmap calls, all of them (segments, tails of large blocks,
                                alignment trims of fresh mappings) */
  uint64_t unmapped_bytes;   /* of those calls, alignment trims (never touched) excepted */
  uint64_t decayed_segments; /* cached segments unmapped by the decay (MANYALLOC_NUMA_DECAY_MS) */
  uint64_t decayed_bytes;
  /* Idle run pages kept resident beyond the heaps' own budgets for reuse
   * (numa/README.md, "Giving memory back"): the heaps' and orphaned heaps'
   * shares and the cached segments' resident pages; and the allowance that
   * bounds new shares (MANYALLOC_NUMA_SHARED_IDLE, the recent peak of run
   * pages, MANYALLOC_NUMA_SHARED_IDLE_PEAK), which may have aged below
   * what is held until the holders give back the excess. */
  uint64_t shared_idle_bytes;
  uint64_t shared_idle_cap_bytes;
  uint32_t heaps, orphan_heaps;
  uint32_t nsources;         /* valid entries of sources[] */
  struct manyalloc_numa_source_stats sources[MANYALLOC_NUMA_MAX_SOURCES];
};

void manyalloc_numa_get_stats(struct manyalloc_numa_stats* out) MANYALLOC_NUMA_NOEXCEPT;
/* Writes a readable summary to the file descriptor (2 = stderr). */
void manyalloc_numa_print_stats(int fd) MANYALLOC_NUMA_NOEXCEPT;
/* Returns cached memory to the OS (also reachable as malloc_trim). */
void manyalloc_numa_trim(void) MANYALLOC_NUMA_NOEXCEPT;

#ifdef __cplusplus
}
#endif
#undef MANYALLOC_NUMA_NOEXCEPT
#endif /* MANYALLOC_NUMA_NUMA_H */
