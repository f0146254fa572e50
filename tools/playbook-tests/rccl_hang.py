from common import *

HOSTS = ['gpu-n17', 'gpu-n18', 'gpu-n21', 'gpu-n33']
IPS = {h: f'10.40.0.{i + 11}' for i, h in enumerate(HOSTS)}
GPUS = 4
N_TRAIN = 120   # 60 min of training at 30 s/step, one step per sample
N_HANG = 80     # 40 min without progress


def facts(status='cancelled', cls='cancelled-after-hang', hosts=HOSTS, last_step=N_TRAIN - 1, extra=None):
    f = {'status': status, 'failure_class': cls, 'classes': [{'failure_class': cls, 'stage': 'job'}],
         'header': {'hosts': hosts, 'nnodes': len(hosts), 'ray': True},
         'progress': {'first_step': 0, 'last_step': last_step, 'step_time_seconds': 30.0}}
    if extra:
        f.update(extra)
    return f


def gpu_series(hang_util, hang_power, hosts=HOSTS, train_power=900, n_train=N_TRAIN, n_hang=N_HANG, gpu_name=None):
    """hang_util/hang_power: fn(host, gpu) -> value (or None for no samples); gpu_name: Ray's
    GpuDeviceName label (absent when None, as in older Ray)."""
    out = []
    named = {'GpuDeviceName': gpu_name} if gpu_name else {}
    for h in hosts:
        for g in range(GPUS):
            u = hang_util(h, g)
            p = hang_power(h, g)
            out.append(series(ray('ray_node_gpus_utilization', h, IPS[h], GpuIndex=str(g), **named),
                              join(seg(100, n_train), gaps(n_hang) if u is None else seg(u, n_hang))))
            out.append(series(hw('hw_gpu_power_watts', h, gpu=str(g)),
                              join(seg(train_power + 3 * g, n_train), gaps(n_hang) if p is None else seg(p, n_hang))))
    return out


def rdma(host, retx_hang_lead=0, hosts=HOSTS):
    """Lifetime RDMA counters: large start values, flat unless retransmits burst in the 10 min
    before the stall."""
    out = []
    for h in hosts:
        base = 4_000_000 + 1000 * hosts.index(h)
        if h == host and retx_hang_lead:
            vals = join(seg(base, N_TRAIN - 20), ramp(base, retx_hang_lead, 20), seg(base + retx_hang_lead * 19, N_HANG))
        else:
            vals = seg(base, N_TRAIN + N_HANG)
        out.append(series(hw('hw_rdma_tx_retx_pkts_total', h, device='ionic_0', port='1'), vals))
        out.append(series(hw('hw_rdma_tx_ack_timeout_total', h, device='ionic_0', port='1'), seg(base // 300, N_TRAIN + N_HANG)))
    return out


def tb(host=HOSTS[0], n_train=N_TRAIN, n_after=N_HANG):
    return tb_series(host, n_train - 1, n_train, n_after)


tests = []

tests.append({
    'name': 'job-wide busy-wait after the last step is an RCCL hang, retried on the same nodes',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(lambda h, g: 100, lambda h, g: 298 + g) + rdma(None) + tb(),
    'facts': facts(),
    'expect': {
        'root_cause': 'rccl-hang', 'action': 'retry-same-nodes', 'confidence': 'confirmed', 'exclude': [],
        'findings': [
            {'id': 'rccl-hang/busy_wait_hang', 'status': 'fired', 'hosts': HOSTS},
            {'id': 'rccl-hang/node_death', 'status': 'clear'},
            {'id': 'rccl-hang/dead_hosts', 'status': 'clear'},
            {'id': 'rccl-hang/stuck_set_suspects', 'status': 'clear'},
            {'id': 'rccl-hang/network_trigger_hosts', 'status': 'clear'},
        ]},
})

# Init-phase style partial hang: GPUs 0-1 spin on most hosts, gpu-n33 spins on 2-3 instead.
odd = 'gpu-n33'
tests.append({
    'name': 'partial hang: the host whose stuck-GPU set differs from the majority is the suspect, still retried as is',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(
        lambda h, g: 100 if (g < 2) != (h == odd) else 0,
        lambda h, g: 301 if (g < 2) != (h == odd) else 259) + rdma(None) + tb(),
    'facts': facts(),
    'expect': {
        'root_cause': 'rccl-hang', 'action': 'retry-same-nodes', 'exclude': [],
        'findings': [
            {'id': 'rccl-hang/busy_wait_hang', 'status': 'fired', 'hosts': HOSTS},
            {'id': 'rccl-hang/stuck_set_suspects', 'status': 'fired', 'hosts': [odd]},
            {'id': 'rccl-hang/idle_hosts', 'status': 'clear'},
        ]},
})

dead = 'gpu-n18'
tests.append({
    'name': 'node death: one host at 0 % / 0 W while the others busy-wait; the dead host is excluded',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(lambda h, g: 0 if h == dead else 100, lambda h, g: 0 if h == dead else 297)
    + rdma(None) + tb(),
    'facts': facts(status='unknown-death', cls='unknown-death'),
    'expect': {
        'root_cause': 'gpu-hardware-fault', 'action': 'retry-excluding-nodes', 'confidence': 'likely',
        'exclude': [{'host': dead, 'priority': 2}],
        'findings': [
            {'id': 'rccl-hang/node_death', 'status': 'fired', 'hosts': [dead]},
            {'id': 'rccl-hang/dead_hosts', 'status': 'fired', 'hosts': [dead]},
            {'id': 'rccl-hang/busy_wait_hang', 'status': 'fired'},
        ]},
})

silent = 'gpu-n21'
tests.append({
    'name': 'node death: a host that stops reporting while the others busy-wait is excluded (likely)',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(lambda h, g: None if h == silent else 100, lambda h, g: None if h == silent else 299)
    + rdma(None) + tb(),
    'facts': facts(status='unknown-death', cls='unknown-death'),
    'expect': {
        'root_cause': 'gpu-hardware-fault', 'action': 'retry-excluding-nodes', 'confidence': 'likely',
        'exclude': [{'host': silent, 'priority': 2}],
        'findings': [{'id': 'rccl-hang/dead_hosts', 'status': 'fired', 'hosts': [silent]}]},
})

trigger = 'gpu-n17'
tests.append({
    'name': 'network-triggered hang: RDMA retransmits just before the stall are named, the decision stays retry-same-nodes',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(lambda h, g: 100, lambda h, g: 300) + rdma(trigger, retx_hang_lead=2500) + tb(),
    'facts': facts(status='failed', cls='heartbeat-timeout',
                   extra={'heartbeat': {'present': True, 'timeout_seconds': 3600,
                                        'crash_time': {'epoch': START + (N_TRAIN + N_HANG - 1) * INTERVAL}}}),
    'expect': {
        'root_cause': 'rccl-hang', 'action': 'retry-same-nodes', 'exclude': [],
        'findings': [
            {'id': 'rccl-hang/busy_wait_hang', 'status': 'fired'},
            {'id': 'rccl-hang/network_trigger_hosts', 'status': 'fired', 'hosts': [trigger]},
        ]},
})

tests.append({
    'name': 'near miss: training-level power after the last logged step is not a hang (log lag)',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(lambda h, g: 100, lambda h, g: 905) + rdma(None) + tb(),
    'facts': facts(status='hanging', cls='hang'),
    # every host at training-level power refutes the log-inferred hang: none (likely), not unknown
    'expect': {
        'root_cause': 'none', 'action': 'none', 'exclude': [],
        'findings': [
            {'id': 'rccl-hang/busy_wait_hang', 'status': 'clear'},
            {'id': 'rccl-hang/node_death', 'status': 'clear'},
            {'id': 'rccl-hang/not_a_hang', 'status': 'fired', 'hosts': HOSTS},
        ]},
})

# Heartbeat false positive timeline: training at ~900 W right up to the crash, no stall at all.
n_all = N_TRAIN + N_HANG
tests.append({
    'name': 'near miss: a heartbeat kill while training progressed to the crash has no stall to judge',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(lambda h, g: 100, lambda h, g: 910, n_train=n_all, n_hang=0) + tb(n_train=n_all, n_after=0),
    'facts': facts(status='failed', cls='heartbeat-timeout', last_step=n_all - 1,
                   extra={'heartbeat': {'present': True, 'timeout_seconds': 900,
                                        'crash_time': {'epoch': START + (n_all - 1) * INTERVAL + 20}}}),
    'expect': {
        'root_cause': 'unknown', 'action': 'none',
        'findings': [
            {'id': 'rccl-hang/busy_wait_hang', 'status': 'clear'},
            {'id': 'rccl-hang/node_death', 'status': 'clear'},
        ]},
})

# A light (memory-bound) MI355X workload trains at ~700 W, but its GPUs busy-wait at the silicon's
# ~300 W, not at a level scaled down with the workload (~270 W): the model Ray names sets the
# busy-wait ceiling. The same workload computing after its last logged step is no hang.
tests.append({
    'name': 'a light MI355X workload (700 W) busy-waiting at ~310 W after the last step is an RCCL hang (the model\'s ceiling)',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(lambda h, g: 100, lambda h, g: 308 + g, train_power=700, gpu_name='AMD Instinct MI355X')
    + rdma(None) + tb(),
    'facts': facts(),
    'expect': {
        'root_cause': 'rccl-hang', 'action': 'retry-same-nodes', 'confidence': 'confirmed', 'exclude': [],
        'findings': [{'id': 'rccl-hang/busy_wait_hang', 'status': 'fired', 'hosts': HOSTS},
                     {'id': 'rccl-hang/not_a_hang', 'status': 'clear'}]},
})

tests.append({
    'name': 'near miss: the light MI355X workload at its 700 W after the last logged step is computing, not hung',
    'interval': '30s', 'start': START,
    'input_series': gpu_series(lambda h, g: 100, lambda h, g: 698 + g, train_power=700, gpu_name='AMD Instinct MI355X')
    + rdma(None) + tb(),
    'facts': facts(status='hanging', cls='hang'),
    'expect': {
        'root_cause': 'none', 'action': 'none', 'exclude': [],
        'findings': [{'id': 'rccl-hang/busy_wait_hang', 'status': 'clear'},
                     {'id': 'rccl-hang/not_a_hang', 'status': 'fired', 'hosts': HOSTS}]},
})

write(os.path.join(TESTS_DIR, 'rccl-hang.test.yaml'),
      '# rccl-hang: generated by tools/playbook-tests/rccl_hang.py (hosts, GPU counts and timings are\n'
      '# arbitrary; nothing in the playbook knows them). 30 s samples: 60 min of training, then 40 min stalled.\n',
      {'playbooks': ['../rccl-hang.yaml'], 'tests': tests})
