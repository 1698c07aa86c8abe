// Cross-thread frees: a producer thread allocates batches of 64 B blocks, the
// main thread frees each batch once the producer has handed it over.
#include <pthread.h>
#include <stdlib.h>
enum { batch = 1000, rounds = 2000 };
static void* blocks[batch];
static void* produce(void* arg) { (void)arg; for (int i = 0; i < batch; ++i) blocks[i] = malloc(64); return 0; }
int main(void) {
  for (int r = 0; r < rounds; ++r) {
    pthread_t t; pthread_create(&t, 0, produce, 0); pthread_join(t, 0);
    for (int i = 0; i < batch; ++i) free(blocks[i]);
  }
  return 0;
}
