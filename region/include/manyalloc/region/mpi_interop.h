/* For applications that also use plain MPI among the workers. */
#ifndef MANYALLOC_REGION_MPI_INTEROP_H
#define MANYALLOC_REGION_MPI_INTEROP_H

#include <mpi.h>

#include "manyalloc/region/region.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Communicator of the workers only (rank = mr_worker_id()); MPI_COMM_NULL on
 * schedulers. Valid between mr_init and mr_finalize. */
MPI_Comm mr_worker_comm(void);

#ifdef __cplusplus
}
#endif

#endif
