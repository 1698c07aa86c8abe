/* A C program using the installed region library: built three ways by the
 * test region.install.c_consumer (install_consumer.cmake): `mpicc ...
 * -lmanyalloc-region`, the C compiler with `pkg-config manyalloc-region`,
 * and a C-only CMake project with find_package(manyalloc). Run with 2 ranks
 * (one scheduler, one worker). */
#include <stdio.h>
#include <string.h>

#include <manyalloc/region/mpi_interop.h>

int main(int argc, char** argv) {
  int rc = 0;
  if (mr_init(&argc, &argv, NULL) != MR_OK) {
    fprintf(stderr, "consumer: %s\n", mr_last_error());
    mr_finalize();
    return 1;
  }
  if (mr_is_worker()) {
    mr_rid_t r = 0;
    long* v = NULL;
    long sum = 0;
    int n = 0;
    if (mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r) != MR_OK || mr_alloc(100 * sizeof *v, r, (void**)&v) != MR_OK) {
      fprintf(stderr, "consumer: %s\n", mr_last_error());
      rc = 1;
    } else {
      for (int i = 0; i < 100; ++i) v[i] = i;
      for (int i = 0; i < 100; ++i) sum += v[i];
      if (sum != 4950 || mr_rfree(r) != MR_OK) rc = 1;
    }
    /* Plain MPI on the workers' communicator, from C. */
    if (MPI_Comm_size(mr_worker_comm(), &n) != MPI_SUCCESS || n != mr_num_workers()) rc = 1;
    /* Errors come back as codes with a reason. */
    if (mr_free(&n) == MR_OK || strstr(mr_last_error(), "mr_free") == NULL) rc = 1;
    if (rc == 0) printf("consumer: ok (%d worker, %d scheduler)\n", mr_num_workers(), mr_num_schedulers());
  }
  if (mr_finalize() != MR_OK) rc = 1;
  return rc;
}
