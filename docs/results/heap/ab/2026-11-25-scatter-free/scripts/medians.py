import json,statistics as st,collections,glob,sys,csv,re
d=collections.defaultdict(list)
for f in glob.glob("t*.jsonl"):
    tag=f.split("_",1)[1][:-6]
    for l in open(f):
        r=json.loads(l)
        if r.get("launch")!="warm": continue
        d[(r["experiment"],r["threads"],r["size"],tag)].append(r["ops_per_s"]/1e9)
keys=sorted(set(k[:3] for k in d))
tags=[t for t in ["mallocMC","base","v1","v3","v3relaxed"] if any(k[3]==t for k in d)]
print("%-17s %8s %6s "%("exp","threads","size")+" ".join("%9s"%t for t in tags))
for k in keys:
    row=[d.get(k+(t,),[]) for t in tags]
    print("%-17s %8d %6s "%k+" ".join("%9s"%(("%.2f"%st.median(v)) if v else "-") for v in row), " rounds:", "/".join(str(len(v)) for v in row))
print()
for f in sorted(glob.glob("ncu_*.csv")):
    durs=[]
    for row in csv.reader(open(f)):
        if len(row)>5 and row[-3:] and "gpu__time_duration" in ",".join(row):
            try: durs.append(float(row[-1].replace(",","")))
            except: pass
    if durs:
        warm=durs[1:]
        print("%-28s n=%2d cold %.2f warm median %.2f min %.2f (%s)"%(f, len(durs), durs[0], st.median(warm), min(warm), "us" ))
