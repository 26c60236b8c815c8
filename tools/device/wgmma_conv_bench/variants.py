# Writes variants.inc, variants_list.inc and hostvariants.sh for make.sh: VARIANTS=call2 (default)
# the eight configurations of the twenty-second session's device call 2, VARIANTS=s23 the
# twenty-third session's set (tile, stages, cluster, CTAs a SM asked of the compiler).
import os

variants_s23 = [
    ("v0", 128, 128, 64, "AUTO", 1, 1, 1),
    ("v1", 128, 64, 64, "4", 1, 1, 2),
    ("v2", 64, 128, 64, "4", 1, 1, 2),
    ("v3", 64, 128, 64, "AUTO", 1, 1, 1),
    ("v4", 256, 64, 64, "AUTO", 1, 1, 1),
    ("v5", 128, 64, 64, "AUTO", 1, 1, 1),
]
variants_call2 = [
    ("v0", 128, 128, 64, "AUTO", 1, 1, 1),
    ("v1", 128, 64, 64, "4", 1, 1, 2),
    ("v2", 64, 128, 64, "4", 1, 1, 2),
    ("v3", 128, 128, 64, "3", 1, 1, 2),
    ("v4", 128, 64, 64, "4", 2, 1, 2),
    ("v5", 64, 128, 64, "4", 1, 2, 2),
    ("v6", 128, 128, 64, "AUTO", 2, 1, 1),
    ("v7", 128, 64, 64, "AUTO", 2, 1, 1),
]
variants = variants_s23 if os.environ.get("VARIANTS", "call2") == "s23" else variants_call2
def stages(st):
    if st == "AUTO":
        return "cutlass::conv::collective::StageCountAutoCarveout<(int)sizeof(typename Epi::SharedStorage)>"
    return "cutlass::conv::collective::StageCount<%s>" % st
inc = []
for (n, tm, tn, tk, st, cm, cn, mb) in variants:
    defs = dict(TM=tm, TN=tn, TK=tk, CM=cm, CN=cn, MINB=mb, STAGES_T=stages(st), KNS=n + "_ns", KNAME=n)
    inc.append("".join("#define %s %s\n" % kv for kv in defs.items()) + '#include "conv_sm90.cu"\n' +
               "".join("#undef %s\n" % k for k in defs))
open("variants.inc", "w").write("\n".join(inc))
with open("variants_list.inc", "w") as f:
    f.write("static const char* kNames[] = {%s};\n" % ",".join('"%s %dx%d st%s c%dx%d mb%d"' % (n, tm, tn, st, cm, cn, mb)
                                                         for (n, tm, tn, tk, st, cm, cn, mb) in variants))
    f.write("static const void* kFns[] = {%s};\n" % ",".join("(const void*)%s" % v[0] for v in variants))
    f.write("static const int kClusterM[] = {%s};\n" % ",".join(str(v[5]) for v in variants))
    f.write("static const int kClusterN[] = {%s};\n" % ",".join(str(v[6]) for v in variants))
    f.write("constexpr int kVariants = %d;\n" % len(variants))
with open("hostvariants.sh", "w") as f:
    for (n, tm, tn, tk, st, cm, cn, mb) in variants:
        f.write("/usr/local/cuda/bin/nvcc -std=c++17 --expt-relaxed-constexpr -DNDEBUG -I. -I$S/include "
                "-I$S/tools/util/include -DAOTC_HOST_PARAMS -DTM=%d -DTN=%d -DTK=%d -DCM=%d -DCN=%d -DMINB=%d "
                "'-DSTAGES_T=%s' -DKNS=h_ns -DKNAME=hk -arch=sm_90a -o host_%s conv_sm90.cu\n" % (tm, tn, tk, cm, cn, mb, stages(st), n))
        f.write("./host_%s shapes.txt rec_%s.txt\n" % (n, n))
