# Python workload for the LD_PRELOAD test: many small objects (dicts, lists,
# strings, tuples, sets), some large buffers grown by realloc, and threads.
# Prints a deterministic summary (run with PYTHONHASHSEED=0).
import threading

def churn(seed, out):
    d = {}
    for i in range(60000):
        k = "k%d" % ((i * 7919 + seed) % 20000)
        d.setdefault(k, []).append((i, str(i) * (i % 7)))
        if len(d[k]) > 5:
            del d[k][:3]
    out[seed] = sum(len(v) for v in d.values()) + sum(len(k) for k in d)

buf = bytearray()
for i in range(2000):
    buf += bytes([i % 256]) * 4096          # grows through realloc into large blocks
objs = [{"id": i, "name": "obj%d" % i, "tags": set(range(i % 10))} for i in range(100000)]
objs.sort(key=lambda o: (len(o["tags"]), o["name"]))
out = {}
threads = [threading.Thread(target=churn, args=(s, out)) for s in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(buf), sum(buf[::4096]), objs[0]["name"], objs[-1]["name"], sorted(out.items()))
