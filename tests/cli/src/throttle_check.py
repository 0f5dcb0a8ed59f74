# throttle_check.py RATE SIDEBAND: the throttling of ptdump --sideband's
# records (kmodel-record.sh). The tick is the greatest common divisor of the
# UNTHROTTLE times (each comes at a tick's time); HZ = 1e9 / tick; the limit
# is DIV_ROUND_UP(RATE, HZ) overflows a tick. Per tick: limit - 1 Resume
# samples, THROTTLE, the Resume sample that throttled (at its time), then no
# sample until UNTHROTTLE. Prints "ok tick T hz H limit L", or what is wrong.
import math
import sys
from functools import reduce

rate = int(sys.argv[1])
recs = []
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 5 and f[3] in ("SAMPLE", "THROTTLE", "UNTHROTTLE"):
        recs.append((f[3], round(float(f[0]) * 1e9), f[4] if f[3] == "SAMPLE" else ""))
unthr = [t for k, t, _ in recs if k == "UNTHROTTLE"]
if len(unthr) < 2:
    print("fewer than 2 UNTHROTTLE records")
    sys.exit()
tick = reduce(math.gcd, unthr)
hz = round(1e9 / tick)
limit = -(-rate // hz)
state, per_tick, after, thr_t, bad = "on", 0, 0, 0, []
for k, t, name in recs:
    if k == "THROTTLE":
        if state != "on":
            bad.append("THROTTLE while throttled at %d" % t)
        if per_tick != limit - 1:
            bad.append("%d Resume samples before THROTTLE at %d" % (per_tick, t))
        state, after, thr_t = "off", 0, t
    elif k == "UNTHROTTLE":
        if state != "off":
            bad.append("UNTHROTTLE while not throttled at %d" % t)
        state, per_tick = "on", 0
    elif state == "off":
        after += 1
        if after > 1 or t != thr_t or name != "Resume":
            bad.append("%s sample at %d while throttled" % (name, t))
    elif name == "Resume":
        per_tick += 1
print("; ".join(bad[:3]) if bad else "ok tick %d hz %d limit %d" % (tick, hz, limit))
