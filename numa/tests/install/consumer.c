/* A C program using the installed node allocator, built by the test
 * numa.install.pkg_config (cmake/InstallTest.cmake) with
 * `cc consumer.c $(pkg-config --cflags --libs manyalloc-numa)` and run:
 * prints "consumer: ok" when the allocator's C API works. */
#include <stdio.h>
#include <string.h>

#include <manyalloc/numa/numa.h>

int main(void) {
  char* p = manyalloc_numa_malloc(1000);
  if (p == NULL) {
    fprintf(stderr, "consumer: manyalloc_numa_malloc(1000) returned NULL\n");
    return 1;
  }
  memset(p, 7, 1000);
  if (!manyalloc_numa_owns(p) || manyalloc_numa_usable_size(p) < 1000 || p[999] != 7) {
    fprintf(stderr, "consumer: the block of manyalloc_numa_malloc is not the allocator's\n");
    return 1;
  }
  manyalloc_numa_free(p);
  printf("consumer: ok (%d NUMA node(s))\n", manyalloc_numa_node_count());
  return 0;
}
