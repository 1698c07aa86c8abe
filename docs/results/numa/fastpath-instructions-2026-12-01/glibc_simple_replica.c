// A replica of mimalloc-bench's glibc-simple loop (bench-malloc-simple.c,
// its batch sizes and free order) with 1/20 of its iterations and no byte
// writes: the allocator's instructions per malloc/free pair under callgrind.
// With the argument `writes` it also writes every byte of every block, as
// glibc-simple does (for cachegrind's simulated caches:
// ../glibc-simple-sim-2026-12-01/README.md).
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
static int writes;
static void run(char** arr, size_t size, int n, long iters) {
  for (long j = 0; j < iters; j++) {
    for (int i = 0; i < n; i++) {
      arr[i] = malloc(size);
      if (writes)
        for (size_t g = 0; g < size; g++) arr[i][g] = (char)g;
    }
    for (int i = 0; i < n / 2; i++) free(arr[i]);
    for (int i = n - 1; i >= n / 2; i--) free(arr[i]);
  }
}
int main(int argc, char** argv) {
  writes = argc > 1 && strcmp(argv[1], "writes") == 0;
  const long iters = 100000;
  const int allocs[4] = {25, 100, 400, 1600};
  char** arr = malloc(1600 * sizeof(char*));
  long pairs = 0;
  for (size_t size = 16; size <= 64; size *= 2)
    for (int t = 0; t < 3; ++t)
      for (int i = 0; i < 4; ++i) { run(arr, size, allocs[i], iters / allocs[i]); pairs += (iters / allocs[i]) * allocs[i]; }
  free(arr);
  printf("%ld pairs\n", pairs);
  return 0;
}
