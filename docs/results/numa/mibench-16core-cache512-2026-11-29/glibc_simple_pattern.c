/* glibc-simple's pattern with a chosen number of pairs per (size, live count):
   n blocks of one size allocated and written, the first half freed oldest
   first, the rest newest first; n = 25, 100, 400, 1600; sizes 16, 32, 64. */
#include <stdlib.h>
int main(int argc, char** argv) {
  const long pairs = argc > 1 ? atol(argv[1]) : 200000;
  static char* live[1600];
  const int counts[4] = {25, 100, 400, 1600};
  for (size_t size = 16; size <= 64; size *= 2)
    for (int c = 0; c < 4; ++c) {
      const int n = counts[c];
      for (long it = 0; it < pairs / n; ++it) {
        for (int i = 0; i < n; ++i) {
          live[i] = malloc(size);
          for (size_t g = 0; g < size; ++g) live[i][g] = (char)g;
        }
        for (int i = 0; i < n / 2; ++i) free(live[i]);
        for (int i = n - 1; i >= n / 2; --i) free(live[i]);
      }
    }
  return 0;
}
