/* manyalloc region: hierarchical, region-based allocation in a global address
 * space over MPI (the Myrmics allocator, [Lyberis2012]). C API, after Figure 1 of
 * [Lyberis2012].
 *
 * Program shape (every rank runs the same main):
 *
 *   mr_init(&argc, &argv, NULL);        // schedulers serve inside mr_init
 *   if (mr_is_worker()) { ...application... }
 *   mr_finalize();
 *
 * Ranks 0 .. mr_num_schedulers()-1 are schedulers; they return from mr_init
 * only when every worker has called mr_finalize. Every call below except
 * mr_init/mr_finalize/queries must be made by a worker. All calls return an
 * mr_status; errors in arguments (bad region id, invalid pointer) come back
 * as codes, they never crash or hang. mr_last_error() says why the last
 * failing call failed (for mr_init: the option, its value and what is
 * allowed, or how many ranks the layout needs).
 */
#ifndef MANYALLOC_REGION_REGION_H
#define MANYALLOC_REGION_REGION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A region id: opaque. It carries a generation (region/README.md), so the
 * id of a freed region fails with MR_ERR_NO_REGION forever, also after the
 * library made new regions. */
typedef uint64_t mr_rid_t;

/* The default top-level region ([Lyberis2012]: region ID 0). */
enum { MR_ROOT_REGION = 0 };
/* Level hint meaning "no hint": the new region goes to a leaf scheduler,
 * the one serving the calling worker when the parent allows it (5.2). */
enum { MR_NO_HINT = -1 };

typedef enum mr_status {
  MR_OK = 0,
  MR_ERR_NO_REGION = 1,        /* region id that does not exist */
  MR_ERR_INVALID_POINTER = 2,  /* not the start of a live object */
  MR_ERR_NO_MEMORY = 3,        /* global address space exhausted */
  MR_ERR_BAD_ARGUMENT = 4,     /* size too large, n <= 0, freeing region 0, ... */
  MR_ERR_NOT_WORKER = 5,       /* call made on a scheduler rank */
  MR_ERR_INIT = 6,             /* mr_init failed: bad option, layout, mapping; or
                                  mr_init called twice or after mr_finalize */
  MR_ERR_TRUNCATED = 7,        /* mr_recv: more regions/objects than room */
  MR_ERR_NOT_INITIALIZED = 8,  /* call before mr_init, after a failed mr_init
                                  or after mr_finalize */
  MR_ERR_THREAD = 9,           /* call from a thread other than the one that
                                  called mr_init (the library is funnelled:
                                  mr_last_error() names the thread) */
  MR_ERR_BAD_REQUEST = 10,     /* mr_wait/mr_test: not a pending request (never
                                  issued, MR_REQUEST_NULL, or already completed
                                  by mr_wait/mr_test) */
  MR_ERR_PEER_FAILED = 11      /* a rank the call needs has died or exited
                                  (see "Failures" below; mr_last_error() names
                                  the rank and how it was detected) */
} mr_status;

/* How mr_send moves data (mr_config.transfer, MANYALLOC_REGION_TRANSFER):
 *   MR_TRANSFER_AUTO ("auto", the default): the ranks of one host back the
 *     global address space with one shared memory object, so a send to a
 *     worker on the same host moves no bytes (zero copy: only region ids and
 *     extents travel); to a worker on another host the bytes are copied.
 *   MR_TRANSFER_COPY ("copy"): private memory on every rank; every send
 *     copies the bytes (one copy, straight from region memory into the same
 *     addresses on the receiver where MPI allows it). */
enum { MR_TRANSFER_DEFAULT = 0, MR_TRANSFER_COPY = 1, MR_TRANSFER_AUTO = 2 };
/* Zero-copy receives map the received pages this process has not mapped
 * before with madvise(MADV_POPULATE_READ) (16 pages per fault) instead of
 * one write fault per 4 KiB page on first touch (mr_config.prefault,
 * MANYALLOC_REGION_PREFAULT on|off; default on; a no-op before Linux 5.14). */
enum { MR_PREFAULT_DEFAULT = 0, MR_PREFAULT_OFF = 1, MR_PREFAULT_ON = 2 };

/* Layout and tuning; zero fields take defaults. Environment variables
 * override the defaults (not explicit fields): MANYALLOC_REGION_LEVELS
 * (1 to 8), MANYALLOC_REGION_FANOUT (1 to 1048576), MANYALLOC_REGION_GAS_MIB
 * (1 to 33554432, whole MiB: no suffix), MANYALLOC_REGION_TRANSFER (auto,
 * copy), MANYALLOC_REGION_PREFAULT (on, off). Every value is checked: a
 * malformed or out-of-range variable or field makes mr_init fail with
 * MR_ERR_INIT, and mr_last_error() names it, its value and what is allowed
 * (an empty variable counts as unset). Negative fields are errors. */
typedef struct mr_config {
  int levels;          /* scheduler tree levels (default 1: one scheduler) */
  int fanout;          /* scheduler-to-scheduler ratio (default 4) */
  uint64_t gas_bytes;  /* global address space size (default 64 GiB) */
  uint64_t leaf_pages_hi;  /* 1-MiB pages a leaf scheduler refills to (default 64); a
                            * scheduler keeps at most twice its share free and
                            * gives whole free pages beyond that back upward */
  uint64_t region_slabs_hi;/* free slabs a new region gets (default 64) */
  int load_threshold;  /* report subtree load upstream when it moved this much (default 4) */
  int transfer;        /* MR_TRANSFER_*; 0: environment, else auto */
  int prefault;        /* MR_PREFAULT_*; 0: environment, else on */
} mr_config;

/* Threads: the library is funnelled. The thread that calls mr_init (when
 * mr_init initialises MPI it asks for MPI_THREAD_FUNNELED) is the only one
 * that may make the other calls; a call from any other thread returns
 * MR_ERR_THREAD and does nothing (mr_last_error() names the thread that may
 * call). The queries (mr_is_worker, mr_worker_id, mr_num_workers,
 * mr_num_schedulers, mr_scheduler_levels, mr_zero_copy, mr_worker_comm,
 * mr_strerror, mr_last_error) read what mr_init set and may be called from
 * any thread; mr_times reports zeros and mr_times_reset does nothing on other
 * threads. When the application initialised MPI itself, call mr_init from
 * its main thread (the one that called MPI_Init/MPI_Init_thread) unless it
 * got MPI_THREAD_SERIALIZED or more.
 *
 * Initialises MPI when the program has not (and mr_finalize then finalises
 * it), checks the settings, maps the global address space. On schedulers it
 * serves until every worker has called mr_finalize. On failure
 * (MR_ERR_INIT, mr_last_error() says why) every rank fails alike, the
 * library stays uninitialised, MPI stays initialised, and mr_init may be
 * called again; mr_finalize then finalises MPI if mr_init had initialised
 * it. Once per process: a second mr_init, or one after mr_finalize, is
 * MR_ERR_INIT. */
mr_status mr_init(int* argc, char*** argv, const mr_config* config);
/* Collective over all ranks. After a failed mr_init it only finalises MPI
 * (when mr_init had initialised it) and returns MR_OK; before mr_init and
 * after mr_finalize it returns MR_ERR_NOT_INITIALIZED. After a peer failed
 * (below) it skips what needs the dead ranks, releases the library, and
 * returns MR_ERR_PEER_FAILED without finalising MPI (MPI_Finalize may wait
 * for the dead rank forever): the program should then exit without
 * MPI_Finalize, as failure_test.cpp does.
 *
 * Failures: a rank that dies (killed, crashed) or exits without mr_finalize
 * is detected where its process is visible, on the same host (a pidfd per
 * watched rank, checked while the library waits), and where the MPI library
 * reports an error on the library's communicators (MPI_ERRORS_RETURN). A
 * call that needs a failed rank returns MR_ERR_PEER_FAILED instead of
 * waiting forever: a worker's requests when its leaf scheduler is gone, or a
 * scheduler on their way; receives and waits on a failed worker; mr_barrier
 * and mr_recv_any once any worker failed. Whether the job survives a dead
 * rank at all is the MPI launcher's choice (OpenMPI: mpiexec
 * --enable-recovery; MPICH: -disable-auto-cleanup); region/README.md,
 * "Failures", says exactly what is and is not detected. */
mr_status mr_finalize(void);

int mr_is_worker(void);
int mr_worker_id(void);      /* 0 .. mr_num_workers()-1, -1 on schedulers */
int mr_num_workers(void);
int mr_num_schedulers(void);
int mr_scheduler_levels(void);
/* A fixed description of a status code. */
const char* mr_strerror(mr_status s);
/* Why the last call of this thread that returned something other than MR_OK
 * failed: one line that starts with the call's name. For MR_ERR_INIT the
 * option (environment variable or mr_config field), its value and what is
 * allowed; or the layout, how many ranks it needs and how many the job has;
 * or the step that failed. For MR_ERR_NOT_INITIALIZED whether the call came
 * before mr_init, after a failed mr_init (with that failure's reason) or
 * after mr_finalize; for MR_ERR_NOT_WORKER the rank; for other codes at
 * least mr_strerror's text. "" until a call failed; calls that succeed leave
 * it alone (like errno). Valid until this thread's next failing call. */
const char* mr_last_error(void);

/* Region management. mr_rfree frees the region with all its sub-regions
 * and their objects, wherever they are and whoever holds them (the
 * ownership rule below says who may free what). With private memory (copy
 * transfers) the freeing worker's own pages of them read as zeros
 * afterwards; other workers' copies are theirs. */
mr_status mr_ralloc(mr_rid_t parent, int level_hint, mr_rid_t* out);
mr_status mr_rfree(mr_rid_t region);

/* Object management. */
mr_status mr_alloc(size_t size, mr_rid_t region, void** out);
mr_status mr_free(void* ptr);
/* Resizes and/or moves an object to new_region; the contents (up to the
 * smaller size) are kept. *out may equal old_ptr. */
mr_status mr_realloc(void* old_ptr, size_t new_size, mr_rid_t new_region, void** out);
/* n objects of `size` in one request. */
mr_status mr_balloc(size_t size, mr_rid_t region, int n, void** objects);

/* Communication. The receiver gets the data at the same addresses;
 * regions are sent with their sub-regions.
 *
 * Sends never wait for the receiver (region/README.md): mr_send returns once
 * the transfer is posted, whatever its size, transfer mode or the peer's
 * state, so any order of sends and receives between workers works (both
 * sending first included) and behaves alike in both transfer modes and
 * across hosts. The bytes of a copying send are read from region memory
 * until the receiver's library has taken them; every blocking call of the
 * library (mr_recv, mr_wait, mr_barrier, mr_finalize) takes in the
 * transfers that arrive meanwhile, straight into their addresses, and keeps
 * them for the mr_recv/mr_irecv that asks for them. A transfer that no
 * receive asks for by mr_finalize is dropped there.
 *
 * Ownership (as in Myrmics, where a send hands the data to the receiving
 * task): after mr_send returns, the sent regions and objects belong to the
 * receiver. The sender must not write them (nor free them), nor read them
 * while the receiver may write them, until it receives them back (or another
 * synchronisation, such as mr_barrier after the receiver is done, hands them
 * back). With zero copy (mr_zero_copy) sender and receiver see the very same
 * bytes, so a write by the sender after the send is seen by the receiver,
 * and vice versa; with copies the sender's writes may or may not travel.
 * Read-only sharing is allowed: the same regions may be sent to several
 * workers that all only read them (the sender too) until a barrier.
 * Everything the sender wrote before mr_send is visible to the receiver
 * after mr_recv returns. */
mr_status mr_send(int peer_worker, const mr_rid_t* regions, int num_regions,
                  void* const* objects, int num_objects);
/* Receives the next transfer from peer_worker (or from any worker:
 * MR_ANY_WORKER; mr_recv_any also says which); the region ids and object
 * pointers are stored into regions/objects (either may be NULL with max 0)
 * and their counts into *num_regions / *num_objects (may be NULL).
 * Transfers from one worker arrive in the order it sent them. */
mr_status mr_recv(int peer_worker, mr_rid_t* regions, int max_regions, int* num_regions,
                  void** objects, int max_objects, int* num_objects);
enum { MR_ANY_WORKER = -1 };
mr_status mr_recv_any(int* source, mr_rid_t* regions, int max_regions, int* num_regions,
                      void** objects, int max_objects, int* num_objects);

/* Non-blocking transfers. A request handle names one pending mr_isend or
 * mr_irecv until mr_wait, or an mr_test that finds it complete, retires it
 * (and sets the handle to MR_REQUEST_NULL); waiting on or testing a handle
 * that is not pending (MR_REQUEST_NULL, never issued, already retired) is
 * MR_ERR_BAD_REQUEST.
 *   mr_isend: as mr_send (the scheduler request that packs the regions is
 *     made at once); the request completes when the receiver's library has
 *     taken the bytes (at once for zero copy, where only the header travels).
 *     A send that fails (bad region, pointer) returns the error, tells the
 *     receiver, and gives MR_REQUEST_NULL.
 *   mr_irecv: the outputs (as for mr_recv; `source` gets the sender's worker
 *     id, may be NULL) are written when the request completes; the status of
 *     the transfer (MR_OK, MR_ERR_TRUNCATED, the sender's error) is what
 *     mr_wait / mr_test return for it. Receives from one peer (or any) are
 *     matched to transfers in the order they were posted.
 * mr_wait blocks until the request completes, taking in arriving transfers
 * meanwhile; mr_test sets *done (1 or 0) and never blocks. Pending requests
 * at mr_finalize are dropped. */
typedef uint64_t mr_request_t;
enum { MR_REQUEST_NULL = 0 };
mr_status mr_isend(int peer_worker, const mr_rid_t* regions, int num_regions,
                   void* const* objects, int num_objects, mr_request_t* request);
mr_status mr_irecv(int peer_worker, mr_rid_t* regions, int max_regions, int* num_regions,
                   void** objects, int max_objects, int* num_objects, int* source,
                   mr_request_t* request);
mr_status mr_wait(mr_request_t* request);
mr_status mr_test(mr_request_t* request, int* done);
/* Barrier among the workers; transfers that arrive meanwhile are taken in. */
mr_status mr_barrier(void);
/* 1 when mr_send to this worker moves no bytes (both on one host sharing
 * the global address space object: MR_TRANSFER_AUTO), 0 when it copies. */
int mr_zero_copy(int peer_worker);

/* Accounting of one scheduler (0 .. mr_num_schedulers()-1). */
typedef struct mr_sched_stats {
  uint64_t regions;       /* local regions (the top scheduler counts region 0) */
  uint64_t free_slabs;    /* 4 KiB slabs free in the scheduler */
  uint64_t pool_slabs;    /* slabs held by region pools (used + free) */
  uint64_t used_slabs;    /* slabs in full or partial slabs */
  uint64_t live_objects;
  uint64_t live_bytes;    /* slot bytes of live objects */
  uint64_t free_ids;
  uint64_t delegated_slabs; /* handed to child schedulers */
  uint64_t messages;      /* control messages handled */
} mr_sched_stats;
mr_status mr_sched_stats_get(int scheduler, mr_sched_stats* out);

/* Time the calling worker spent, since the last reset, in requests to the
 * schedulers (every call above that talks to them, packing included), in
 * worker-to-worker data transfer, and waiting in mr_barrier. */
void mr_times(double* sched_comm_s, double* worker_comm_s, double* barrier_s);
void mr_times_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* MANYALLOC_REGION_REGION_H */
