/* A C program (no C++ runtime) run with the node allocator preloaded: its
 * allocations must come from the allocator, and the preload must not have
 * loaded libstdc++ or libgcc_s (the library depends on the C library only,
 * numa/CMakeLists.txt). With a C++ module as argument (cxx_module.cpp), it
 * then loads it with dlopen(RTLD_LOCAL), as Python loads an extension, and
 * checks that the module's operator new is the allocator's and that a
 * failing one throws std::bad_alloc (nothrow: nullptr). Exit status 0 when
 * all of that holds. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
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

  if (argc > 1) {
    void* module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (module == NULL) {
      fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
      return 1;
    }
    int (*failing_new)(void) = (int (*)(void))dlsym(module, "cxx_module_failing_new");
    void* (*cxx_new)(size_t) = (void* (*)(size_t))dlsym(module, "cxx_module_new");
    void (*cxx_delete)(void*) = (void (*)(void*))dlsym(module, "cxx_module_delete");
    if (failing_new == NULL || cxx_new == NULL || cxx_delete == NULL) {
      fprintf(stderr, "the module lacks its functions\n");
      return 1;
    }
    void* p = cxx_new(100);
    if (!owns(p)) {
      fprintf(stderr, "the module's operator new is not the allocator's\n");
      status = 1;
    }
    cxx_delete(p);
    const int failed = failing_new();
    if (failed != 3) {
      fprintf(stderr, "failing operator new in the module: %d (3 expected)\n", failed);
      status = 1;
    }
  }
  printf("%s\n", status == 0 ? "ok" : "failed");
  return status;
}
