/* A C program (no C++ runtime) run with the node allocator preloaded: its
 * allocations must come from the allocator, and the preload must not have
 * loaded libstdc++ or libgcc_s (the library depends on the C library only,
 * numa/CMakeLists.txt). Exit status 0 when both hold. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  int (*owns)(const void*) = (int (*)(const void*))dlsym(RTLD_DEFAULT, "manyalloc_numa_owns");
  if (owns == NULL) {
    fprintf(stderr, "the allocator is not preloaded\n");
    return 1;
  }
  int status = 0;
  char* blocks[64];
  for (int i = 0; i < 64; ++i) {
    blocks[i] = malloc((size_t)(i + 1) * 100);
    memset(blocks[i], i, (size_t)(i + 1) * 100);
    if (!owns(blocks[i])) {
      fprintf(stderr, "block %d (%p) is not the allocator's\n", i, (void*)blocks[i]);
      status = 1;
    }
  }
  for (int i = 0; i < 64; ++i) free(blocks[i]);

  FILE* maps = fopen("/proc/self/maps", "r");
  char line[512];
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    if (strstr(line, "libstdc++") != NULL || strstr(line, "libgcc_s") != NULL) {
      fprintf(stderr, "C++ runtime loaded: %s", line);
      status = 1;
    }
  }
  if (maps != NULL) fclose(maps);
  printf("%s\n", status == 0 ? "ok" : "failed");
  return status;
}
