/* For applications that also use plain MPI among the workers. */
#ifndef MANYALLOC_REGION_MPI_INTEROP_H
#define MANYALLOC_REGION_MPI_INTEROP_H

#include <mpi.h>

#include "manyalloc/region/region.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Communicator of the workers only (rank = mr_worker_id()); MPI_COMM_NULL on
 * schedulers and outside mr_init .. mr_finalize. It is the application's:
 * the library never sends, receives or synchronises on it (nor on
 * MPI_COMM_WORLD after mr_init's first MPI_Comm_dup), so every tag and
 * wildcard receive is free for the application and can never match a
 * message of the library. Valid between mr_init and mr_finalize (freed
 * there). */
MPI_Comm mr_worker_comm(void);

#ifdef __cplusplus
}
#endif

#endif
