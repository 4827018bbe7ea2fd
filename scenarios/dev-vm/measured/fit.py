#!/usr/bin/env python3
"""Fits the round model to run2: cycle time per round QD/IOPS = c + s*QD, and slat = a + k/QD."""
import json
runs = {1: 'qd1-libaio', 2: 'libaio-qd2', 4: 'libaio-qd4', 8: 'libaio-qd8', 16: 'libaio-qd16', 32: 'libaio-qd32', 64: 'libaio-qd64'}
xs, ys, ss = [], [], []
for qd, name in runs.items():
    j = json.load(open(f'run2/{name}.json'))['jobs'][0]['read']
    xs.append(qd); ys.append(qd / j['iops'] * 1e6); ss.append(j['slat_ns']['mean'] / 1e3)
def lsq(x, y):
    n = len(x); mx = sum(x) / n; my = sum(y) / n
    b = sum((a - mx) * (c - my) for a, c in zip(x, y)) / sum((a - mx) ** 2 for a in x)
    return my - b * mx, b
c, s = lsq(xs, ys)
print(f'round time = {c:.1f} us + {s:.2f} us x QD   (all QD 1..64)')
for x, y in zip(xs, ys):
    print(f'  QD{x:<3} measured {y:7.1f} us  model {c + s * x:7.1f} us  ({(c + s * x) / y - 1:+.1%})')
a, k = lsq([1 / x for x in xs], ss)
print(f'slat = {a:.2f} us + {k:.2f} us / QD')
for x, y in zip(xs, ss):
    print(f'  QD{x:<3} measured {y:5.2f} us  model {a + k / x:5.2f} us')
