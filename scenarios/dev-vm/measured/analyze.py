#!/usr/bin/env python3
"""Table of the fio runs: IOPS, clat, virtio-blk request-queue interrupts/s, I/Os per interrupt, CPU."""
import json, sys

def irq(path, name='virtio1-req.0'):
    for line in open(path):
        if line.rstrip().endswith(name):
            f = line.split()
            return sum(int(x) for x in f[1:3]), [int(x) for x in f[1:3]]
    raise SystemExit(f'{path}: no row {name}')

def row(path, label):
    for line in open(path):
        if line.startswith(label + ':'):
            return [int(x) for x in line.split()[1:3]]
    return [0, 0]

def stat(path):
    s = {}
    for line in open(path):
        f = line.split()
        if f[0].startswith('cpu'):
            s[f[0]] = [int(x) for x in f[1:]]
        elif f[0] == 'ctxt':
            s['ctxt'] = int(f[1])
    return s

def blk(path):
    f = [int(x) for x in open(path).read().split()]
    return f[0]  # reads completed

runs = sys.argv[1:]
print('| run | IOPS | slat mean µs | clat mean µs | clat p50 µs | clat p99 µs | irq/s | I/Os per irq | fio usr % | fio sys % | fio CPU µs/I/O | system busy % (of 200) | irq+softirq % | ctxt/s | QD/IOPS µs |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for name in runs:
    j = json.load(open(f'{name}.json'))
    jobs = j['jobs']
    iops = sum(x['read']['iops'] for x in jobs)
    # group_reporting gives one entry; otherwise weight by iops
    clat = jobs[0]['read']['clat_ns']
    mean = clat['mean'] / 1e3
    slat = jobs[0]['read']['slat_ns']['mean'] / 1e3
    p50 = clat['percentile']['50.000000'] / 1e3
    p99 = clat['percentile']['99.000000'] / 1e3
    usr = sum(x['usr_cpu'] for x in jobs)
    sys_ = sum(x['sys_cpu'] for x in jobs)
    i0, _ = irq(f'{name}.irq0'); i1, per = irq(f'{name}.irq1')
    _, p0 = irq(f'{name}.irq0')
    dirq = i1 - i0
    dio = blk(f'{name}.blk1') - blk(f'{name}.blk0')
    t = float(open(f'{name}.t1').read()) - float(open(f'{name}.t0').read())
    s0, s1 = stat(f'{name}.stat0'), stat(f'{name}.stat1')
    d = [b - a for a, b in zip(s0['cpu'], s1['cpu'])]
    tot = sum(d[:8]); idle = d[3] + d[4]
    busy = 200 * (tot - idle) / tot
    irqpct = 200 * (d[5] + d[6]) / tot
    ctxt = (s1['ctxt'] - s0['ctxt']) / t
    r0 = row(f'{name}.irq0', 'RES'); r1 = row(f'{name}.irq1', 'RES')
    res = (sum(r1) - sum(r0)) / t
    per_io = dio / dirq if dirq else float('inf')
    nj = int(j['global options'].get('numjobs', jobs[0].get('job options', {}).get('numjobs', '1')))
    qd = int(j['global options'].get('iodepth', jobs[0].get('job options', {}).get('iodepth', '1'))) * nj
    cpu_io = (usr + sys_) * (nj if len(jobs) == 1 and nj > 1 else 1) * 1e4 / iops
    print(f'| {name} | {iops/1e3:.1f}K | {slat:.1f} | {mean:.1f} | {p50:.1f} | {p99:.1f} | {iops/per_io/1e3:.1f}K | {per_io:.2f} | {usr:.1f} | {sys_:.1f} | {cpu_io:.1f} | {busy:.0f} | {irqpct:.1f} | {ctxt/1e3:.1f}K | {qd/iops*1e6:.1f} |')
