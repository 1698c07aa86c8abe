#include <stdlib.h>
#include <stdio.h>
int main(int argc, char** argv) {
  int n = 2000000; size_t sz = argc > 1 ? atoi(argv[1]) : 64;
  void* keep[64];
  for (int i = 0; i < 64; i++) keep[i] = malloc(sz);
  unsigned long s = 0;
  for (int i = 0; i < n; i++) { char* p = malloc(sz); p[0] = (char)i; s += (unsigned long)p[0]; free(keep[i & 63]); keep[i & 63] = p; }
  printf("%lu\n", s);
  return 0;
}
