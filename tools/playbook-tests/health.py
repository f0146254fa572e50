from more import test, emit
from job import *

# ------------------------------------------------------------------ gpu-health
GH_FAM = ['hw_gpu_power_watts', 'hw_gpu_temperature_celsius', 'hw_gpu_clock_mhz', 'hw_gpu_vram_used_bytes',
          'ray_node_gpus_utilization']
hosts = ['g-a01', 'g-a02', 'g-b01']
tests = []
j = Job(hosts, gpus=4, n=100, seed=41, ckpt_every=30, ckpt_len=4)
tests.append(test('clean GPUs with checkpoint dips: no anomaly, verdict none', j, facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'gpu-health/anomalous_hosts', 'status': 'clear'},
                                {'id': 'gpu-health/gpu_table', 'status': 'clear'},
                                {'id': 'gpu-health/gpu_anomaly', 'status': 'clear'}]},
                  families=GH_FAM, tb_host=hosts[0]))

j = Job(hosts, gpus=4, n=100, seed=42)
j.override('hw_gpu_temperature_celsius', lambda h, g, i, d: round(d + 9, 1) if (h == 'g-a02' and g == 1) else d)
j.override('hw_gpu_power_watts', lambda h, g, i, d: round(d - 140, 1) if (h == 'g-b01' and g == 3) else d)
tests.append(test('a hot GPU and a low-power GPU on a completed job: named in findings and notes, verdict none', j, facts(j),
                  {'root_cause': 'none', 'action': 'none', 'exclude': [],
                   'findings': [{'id': 'gpu-health/anomalous_hosts', 'status': 'fired', 'hosts': ['g-a02', 'g-b01']},
                                {'id': 'gpu-health/gpu_anomaly', 'status': 'fired'}]},
                  families=GH_FAM, tb_host=hosts[0]))

j = Job(hosts, gpus=4, n=100, seed=43)
j.override('hw_gpu_vram_used_bytes', lambda h, g, i, d: 301000000000 if h == 'g-b01' else d)
j.override('ray_node_gpus_utilization', lambda h, g, i, d: 62 if h == 'g-a01' else d)
tests.append(test('VRAM above 95 % on one host and an underutilized host are reported', j, facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'gpu-health/anomalous_hosts', 'status': 'fired', 'hosts': ['g-a01', 'g-b01']}]},
                  families=GH_FAM, tb_host=hosts[0]))
emit('gpu-health', 'health.py', tests)

# ------------------------------------------------------------------ network-health
NH_FAM = ['hw_rdma_tx_retx_pkts_total', 'hw_rdma_tx_ack_timeout_total', 'hw_rdma_req_tx_retry_excd_err_total',
          'hw_rdma_req_rx_cqe_err_total', 'hw_rdma_rx_cnp_pkts_total', 'hw_rdma_tx_cnp_pkts_total',
          'hw_rdma_port_state', 'hw_tcp_retransmits_total']
hosts = ['nw-01', 'nw-02', 'nw-03', 'nw-04']
tests = []
j = Job(hosts, n=120, seed=51, ckpt_every=40, ckpt_len=8, writers=hosts[:2], noise=False)
tests.append(test('clean RDMA with TCP storms on the checkpoint writers: none (TCP noted only)', j, facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'network-health/network_anomalies', 'status': 'clear'},
                                {'id': 'network-health/network_anomaly', 'status': 'clear'},
                                {'id': 'network-health/network_table', 'status': 'clear'}]},
                  families=NH_FAM))

j = Job(hosts, n=120, seed=52, noise=False)
j.override('hw_rdma_tx_retx_pkts_total', lambda h, g, i, d: d + max(0, i - 30) * 900 if h == 'nw-03' else d)
j.override('hw_rdma_tx_ack_timeout_total', lambda h, g, i, d: d + max(0, i - 30) * 3 if h == 'nw-03' else d)
tests.append(test('sustained RDMA retransmits on one host of a completed job: named in findings and notes, verdict none', j,
                  facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'network-health/network_anomalies', 'status': 'fired', 'hosts': ['nw-03']}]},
                  families=NH_FAM))

j = Job(hosts, n=120, seed=53, noise=False)
j.override('hw_rdma_port_state', lambda h, g, i, d: 0 if (h == 'nw-02' and 80 <= i < 90) else d)
j.override('hw_rdma_req_rx_cqe_err_total', lambda h, g, i, d: (0 if i < 80 else 4) if h == 'nw-02' else d)
tests.append(test('a port down with CQE errors on a completed job is reported per host, verdict none', j, facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'network-health/network_anomalies', 'status': 'fired', 'hosts': ['nw-02']}]},
                  families=NH_FAM))
# Scrapes missed in the middle of a fault: the rate has no point over the hole, but a link that
# retransmits on both sides of it was not healed by the missed scrapes. The retransmits the host
# held are read across the hole; a burst that ended before it is not stretched over it, and one
# that went on into it is read for no longer than the counter's growth across the hole can have
# taken at the highest rate the host showed.
def missed_mid_fault(seed, fault_end, fault_start=30, hole_span=(34, 48)):
    j = Job(hosts, n=120, seed=seed, noise=False)
    hole = lambda h, i: h == 'nw-03' and hole_span[0] <= i < hole_span[1]
    grown = lambda i: max(0, min(i, fault_end) - fault_start)
    j.override('hw_rdma_tx_retx_pkts_total',
               lambda h, g, i, d: None if hole(h, i) else (d + grown(i) * 900 if h == 'nw-03' else d))
    j.override('hw_rdma_tx_ack_timeout_total',
               lambda h, g, i, d: None if hole(h, i) else (d + grown(i) * 3 if h == 'nw-03' else d))
    return j


j = missed_mid_fault(54, 52)
tests.append(test('one host retransmits with ACK timeouts for 11 min, 7 of them unscraped: still sustained, named', j,
                  facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'network-health/network_anomalies', 'status': 'fired', 'hosts': ['nw-03']}]},
                  families=NH_FAM))

j = missed_mid_fault(55, 33, fault_start=27)
tests.append(test('near miss: a 3 min retransmit burst that ended before the host\'s scrapes were missed is not sustained', j,
                  facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'network-health/network_anomalies', 'status': 'clear'}]},
                  families=NH_FAM))
# The same ended burst, and a second port on the host first listed after the hole (an exporter that
# began to report it) with its lifetime total of 4,000,000 retransmits: it grew by nothing, so the
# hole held nothing. Counted per series, not as a per-host sum whose jump read as the hole's growth.
j = missed_mid_fault(56, 33, fault_start=27)
t = test('near miss: a burst ended before the scrape hole and a port first listed after it is not sustained', j,
         facts(j),
         {'root_cause': 'none', 'action': 'none',
          'findings': [{'id': 'network-health/network_anomalies', 'status': 'clear'}]},
         families=NH_FAM)
t['input_series'].append(series(hw('hw_rdma_tx_retx_pkts_total', 'nw-03', device='ionic_1', port='1'),
                                join(gaps(48), seg(4000000, j.n - 48))))
tests.append(t)
# The counter grew by 1,800 across the hole: a minute at the 30/s the host showed, not the hole's
# seven (the rate points before it and that minute stay under five).
j = missed_mid_fault(57, 36)
tests.append(test('near miss: a 3 min burst that went on a minute into a 7 min scrape hole is not stretched over it', j,
                  facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'network-health/network_anomalies', 'status': 'clear'}]},
                  families=NH_FAM))
# One scrape after the link went bad, then 20 minutes unscraped while it went on: rate() has no
# point in the hole, but the counter grew by 26,100 across it, at least 14 minutes at the rate the
# host showed. Sustained, named.
j = missed_mid_fault(58, 60, fault_start=30, hole_span=(32, 72))
tests.append(test('one scrape after the link went bad, then a 20 min scrape hole: the counter\'s growth across it is read', j,
                  facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'network-health/network_anomalies', 'status': 'fired', 'hosts': ['nw-03']}]},
                  families=NH_FAM))
emit('network-health', 'health.py', tests)

# ------------------------------------------------------------------ training-stability
hosts = ['tr-h0', 'tr-h1']
tests = []


def loss_ok(i):
    return round(2.0 + 6.0 * (0.97 ** i), 4)


def tb_extra(loss=loss_ok, raw=lambda i: 1.1, clipped=lambda i: 1.0, lr=lambda i: 3e-4):
    return {'tb_learning_loss': loss, 'tb_learning_raw_grad_norm': raw, 'tb_learning_grad_norm': clipped,
            'tb_learning_current_learning_rate': lr}


j = Job(hosts, gpus=1, n=120, seed=61, noise=False)
tests.append(test('loss rising well above its minimum is divergence: training-instability, no retry', j, facts(j),
                  {'root_cause': 'training-instability', 'domain': 'training', 'action': 'no-retry',
                   'findings': [{'id': 'training-stability/loss_diverged', 'status': 'fired'},
                                {'id': 'training-stability/log_fallback', 'status': 'clear'},
                                {'id': 'training-stability/training_instability', 'status': 'fired'}]},
                  families=[], tb_host=hosts[0],
                  tb_extra=tb_extra(loss=lambda i: loss_ok(i) if i < 90 else round(loss_ok(90) + 0.12 * (i - 90), 4))))

tests.append(test('a NaN loss in a real sample is named', j, facts(j),
                  {'root_cause': 'training-instability', 'action': 'no-retry',
                   'findings': [{'id': 'training-stability/nonfinite', 'status': 'fired'}]},
                  families=[], tb_host=hosts[0], tb_extra=tb_extra(loss=lambda i: 'NaN' if i >= 100 else loss_ok(i))))

tests.append(test('a NaN the run recovered from is a warning, not a lost run', j, facts(j),
                  {'root_cause': 'training-instability', 'action': 'none', 'confidence': 'possible',
                   'findings': [{'id': 'training-stability/nonfinite', 'status': 'fired'},
                                {'id': 'training-stability/training_instability', 'status': 'clear'},
                                {'id': 'training-stability/training_warning', 'status': 'fired'}]},
                  families=[], tb_host=hosts[0], tb_extra=tb_extra(loss=lambda i: 'NaN' if i == 50 else loss_ok(i))))


tests.append(test('near miss: raw grad-norm spikes contained by clipping with a stable loss are healthy', j, facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'training-stability/training_instability', 'status': 'clear'},
                                {'id': 'training-stability/clipped_spikes', 'status': 'clear'},
                                {'id': 'training-stability/loss_diverged', 'status': 'clear'}]},
                  families=[], tb_host=hosts[0],
                  tb_extra=tb_extra(raw=lambda i: 40.0 if i in (37, 81) else 1.1, clipped=lambda i: 1.0)))

tests.append(test('grad-norm spikes that survive clipping with a converging loss: named, action none', j, facts(j),
                  {'root_cause': 'training-instability', 'action': 'none', 'confidence': 'possible',
                   'findings': [{'id': 'training-stability/clipped_spikes', 'status': 'fired'},
                                {'id': 'training-stability/training_warning', 'status': 'fired'},
                                {'id': 'training-stability/training_instability', 'status': 'clear'}]},
                  families=[], tb_host=hosts[0],
                  tb_extra=tb_extra(raw=lambda i: 40.0 if i in (37, 81) else 1.1,
                                    clipped=lambda i: 25.0 if i in (37, 81) else 1.0)))

steps = [{'step': s, 'seconds': 30.0, 'loss': round(loss_ok(s) if s < 60 else loss_ok(60) * (1 + 0.05 * (s - 60)), 4),
          'tokens_per_sec_per_device': 1300.0} for s in range(100)]
nan_steps = [dict(st, loss=float('nan')) if st['step'] >= 90 else st for st in steps]
transient_nan_steps = [dict(st, loss=float('nan')) if st['step'] == 40 else st for st in steps[:60]]
# No TSDB: the log's step records decide alone. (name, steps, root cause, action, {finding: status})
for name, case_steps, root, action, expected in [
        ('no TSDB: the log step records show the divergence', steps, 'training-instability', 'no-retry',
         {'log_loss_diverged': 'fired', 'log_only_instability': 'fired'}),
        ('no TSDB: NaN losses in the log step records are instability even after the divergence', nan_steps,
         'training-instability', 'no-retry', {'log_nonfinite': 'fired', 'log_only_instability': 'fired'}),
        ('no TSDB: one NaN step the run recovered from is named but is not instability', transient_nan_steps,
         'none', 'none', {'log_nonfinite': 'fired', 'log_only_instability': 'clear'})]:
    tests.append(test(name, j, facts(j, steps=case_steps),
                      {'root_cause': root, 'action': action,
                       'findings': [{'id': 'training-stability/' + k, 'status': v} for k, v in expected.items()]},
                      no_series=True))
tests.append(test('tb_* stopped early (plugin gave up): the log step records still show the divergence', j,
                  facts(j, steps=steps),
                  {'root_cause': 'training-instability', 'action': 'no-retry',
                   'findings': [{'id': 'training-stability/loss_diverged', 'status': 'fired'},
                                {'id': 'training-stability/log_fallback', 'status': 'fired'},
                                {'id': 'training-stability/training_instability', 'status': 'fired'}]},
                  families=['hw_procs_running']))
emit('training-stability', 'health.py', tests)

# ------------------------------------------------------------------ checkpoint-interference
hosts = ['ck-01', 'ck-02', 'ck-03', 'ck-04']
tests = []
CK_FAM = ['hw_io_pressure_full_pct', 'hw_procs_blocked']


def ck_steps(n, period, save_seconds, extra=None):
    out = []
    for s in range(n):
        sec = 30.0 + (s % 5) * 0.1
        if s == 0:
            sec = 240.0
        if s > 0 and (s - 1) % period == 0 and s > 1:
            sec = save_seconds
        if s == 1:
            sec = save_seconds   # the step-0 save of a fresh run
        if extra and s in extra:
            sec = extra[s]
        out.append({'step': s, 'seconds': sec, 'loss': round(3 - 0.004 * s, 3), 'tokens_per_sec_per_device': 1300.0})
    return out


j = Job(hosts, n=120, seed=71, ckpt_every=50, ckpt_len=8, writers=hosts[:2], noise=False)
tests.append(test('healthy run with periodic checkpoints: spikes expected, nothing fires', j,
                  facts(j, steps=ck_steps(120, 50, 260.0), extra={
                      'progress': {'checkpoint_period': 50},
                      'header': {'passthrough': {'jax_distributed_heartbeat_timeout_seconds': '14400'}},
                      'checkpoint_saves': [0, 50, 100], 'tgs': {'pattern': 'periodic-checkpoint-spikes'}}),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'checkpoint-interference/checkpoint_schedule', 'status': 'clear'},
                                {'id': 'checkpoint-interference/heartbeat_risk', 'status': 'clear'},
                                {'id': 'checkpoint-interference/fs_error_checkpoint_intact', 'status': 'clear'},
                                {'id': 'checkpoint-interference/heartbeat_risk_note', 'status': 'clear'}]},
                  families=CK_FAM))

tests.append(test('a checkpoint save approaching the heartbeat timeout is a risk finding, not a failure', j,
                  facts(j, steps=ck_steps(120, 50, 780.0), extra={
                      'progress': {'checkpoint_period': 50},
                      'header': {'passthrough': {'jax_distributed_heartbeat_timeout_seconds': '900'}},
                      'checkpoint_saves': [0, 50, 100]}),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'checkpoint-interference/heartbeat_risk', 'status': 'fired'},
                                {'id': 'checkpoint-interference/heartbeat_risk_note', 'status': 'fired'}]},
                  families=CK_FAM))

fs_host = 'ck-01'
tests.append(test('checkpoint FS error on one worker while the others saved that step: checkpoint intact, retry', j,
                  facts(j, status='failed', cls='checkpoint-fs-error', last_step=100,
                        classes=[{'failure_class': 'checkpoint-fs-error', 'host': fs_host, 'task': 0}],
                        steps=ck_steps(101, 50, 260.0),
                        extra={'progress': {'checkpoint_period': 50}, 'checkpoint_saves': [0, 50, 100]}),
                  {'root_cause': 'checkpoint-io-stall', 'action': 'retry-same-nodes', 'exclude': [],
                   'findings': [{'id': 'checkpoint-interference/fs_error_checkpoint_intact', 'status': 'fired',
                                 'hosts': [fs_host]}]},
                  families=CK_FAM))

tests.append(test('checkpoint FS error with no save of that step logged: the checkpoint may be incomplete', j,
                  facts(j, status='failed', cls='checkpoint-fs-error', last_step=100,
                        classes=[{'failure_class': 'checkpoint-fs-error', 'host': fs_host, 'task': 0}],
                        steps=ck_steps(101, 50, 260.0),
                        extra={'progress': {'checkpoint_period': 50, 'last_checkpoint_step': 50},
                               'checkpoint_saves': [0, 50]}),
                  {'root_cause': 'checkpoint-io-stall', 'action': 'retry-same-nodes',
                   'findings': [{'id': 'checkpoint-interference/fs_error_checkpoint_intact', 'status': 'clear'},
                                {'id': 'checkpoint-interference/fs_error_checkpoint_lost', 'status': 'fired'}]},
                  families=CK_FAM))
emit('checkpoint-interference', 'health.py', tests)

# ------------------------------------------------------------------ observability-gaps
OG_FAM = ['hw_gpu_power_watts', 'hw_gpu_temperature_celsius', 'hw_gpu_clock_mhz', 'ray_node_gpus_utilization',
          'ray_node_mem_used', 'hw_rdma_tx_retx_pkts_total', 'hw_tcp_retransmits_total', 'hw_procs_running',
          'hw_oom_kills_total', 'hw_io_pressure_full_pct', 'hw_scrape_duration_seconds']
TB = {'tb_learning_loss': lambda i: round(3 - 0.01 * i, 3)}
hosts = ['ob-1', 'ob-2', 'ob-3']
tests = []
j = Job(hosts, gpus=2, n=100, seed=81)
tests.append(test('full telemetry with noise: no gap', j, facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'observability-gaps/ghost_hosts', 'status': 'clear'},
                                {'id': 'observability-gaps/gap_hosts', 'status': 'clear'},
                                {'id': 'observability-gaps/missing_hosts', 'status': 'clear'},
                                {'id': 'observability-gaps/missing_families', 'status': 'clear'},
                                {'id': 'observability-gaps/telemetry_broken', 'status': 'clear'},
                                {'id': 'observability-gaps/no_tsdb', 'status': 'clear'}]},
                  families=OG_FAM, tb_host=hosts[0], tb_extra=TB))

j = Job(hosts, gpus=2, n=100, seed=82)
j.override('hw_gpu_power_watts', lambda h, g, i, d: 912.5 if (h == 'ob-2' and i >= 40) else d)
j.override('hw_gpu_temperature_celsius', lambda h, g, i, d: 84.0 if (h == 'ob-2' and i >= 40) else d)
j.override('hw_scrape_duration_seconds', lambda h, g, i, d: 0.137 if (h == 'ob-2' and i >= 40) else d)
tests.append(test('ghost exporter: hw_* and the cycle time frozen on one host', j, facts(j),
                  {'root_cause': 'observability-gap', 'action': 'none', 'confidence': 'likely',
                   'findings': [{'id': 'observability-gaps/ghost_hosts', 'status': 'fired', 'hosts': ['ob-2']}]},
                  families=OG_FAM, tb_host=hosts[0], tb_extra=TB))

j = Job(hosts, gpus=2, n=100, seed=83)
tests.append(test('a host that never reported and missing families', j,
                  facts(j, extra={'header': {'hosts': hosts + ['ob-4']}}),
                  {'root_cause': 'observability-gap', 'action': 'none', 'confidence': 'possible',
                   'findings': [{'id': 'observability-gaps/missing_hosts', 'status': 'fired', 'hosts': ['ob-4']},
                                {'id': 'observability-gaps/missing_families', 'status': 'fired'}]},
                  families=[f for f in OG_FAM if f != 'ray_node_gpus_utilization']))

j = Job(hosts, gpus=2, n=100, seed=84)
j.override('hw_scrape_duration_seconds', lambda h, g, i, d: None if (h == 'ob-3' and 20 <= i < 70) else d)
j.override('hw_gpu_power_watts', lambda h, g, i, d: None if (h == 'ob-3' and 20 <= i < 70) else d)
tests.append(test('a 25-minute scrape gap on one host', j, facts(j),
                  {'root_cause': 'observability-gap', 'action': 'none',
                   'findings': [{'id': 'observability-gaps/gap_hosts', 'status': 'fired', 'hosts': ['ob-3']},
                                {'id': 'observability-gaps/ghost_hosts', 'status': 'clear'}]},
                  families=OG_FAM, tb_host=hosts[0], tb_extra=TB))

j = Job(hosts, gpus=2, n=100, seed=86)
for fam in ('hw_gpu_power_watts', 'hw_gpu_temperature_celsius', 'hw_gpu_clock_mhz'):
    j.override(fam, lambda h, g, i, d: None if h == 'ob-2' else d)
tests.append(test('GPU plugin not running on one host: its GPU conclusions cannot be drawn', j, facts(j),
                  {'root_cause': 'observability-gap', 'action': 'none', 'confidence': 'possible',
                   'findings': [{'id': 'observability-gaps/family_gap_hosts', 'status': 'fired', 'hosts': ['ob-2']},
                                {'id': 'observability-gaps/missing_families', 'status': 'clear'},
                                {'id': 'observability-gaps/gap_hosts', 'status': 'clear'}]},
                  families=OG_FAM, tb_host=hosts[0], tb_extra=TB))

# One exporter down the whole job on one host while the other reports: no coverage ratio to compare
# (no sample at all), the largest gap there is. The note names the exporter missing: node_hw down
# leaves its Ray series to judge, Ray down its hardware series.
for down, up, seed, title in (('node_hw', 'Ray', 87, 'node_hw down the whole job on one host whose Ray agent reports: a gap, not a clean host'),
                              ('Ray', 'node_hw', 90, 'Ray down the whole job on one host whose node_hw reports: a gap named by its exporter')):
    j = Job(hosts, gpus=2, n=100, seed=seed)
    for fam in OG_FAM:
        if fam.startswith('ray_') == (down == 'Ray'):
            j.override(fam, lambda h, g, i, d: None if h == 'ob-3' else d)
    tests.append(test(title, j, facts(j),
                      {'root_cause': 'observability-gap', 'action': 'none', 'exclude': [],
                       'notes_contains': [f'No {down} sample at all from ob-3 (the other hosts reported; its {up} series did)'],
                       'findings': [{'id': 'observability-gaps/gap_hosts', 'status': 'fired', 'hosts': ['ob-3']},
                                    {'id': 'observability-gaps/missing_hosts', 'status': 'clear'}]},
                      families=OG_FAM, tb_host=hosts[0], tb_extra=TB))

# The snapshot ends at step 99 while the log runs to step 149 (25 minutes later): TGS fell at step
# 120, after it, so the TSDB cannot say why; clean families in it prove nothing.
j = Job(hosts, gpus=2, n=100, seed=88)
# Near miss: the TensorBoard plugin stopped at step 99 of 149 while the exporters kept reporting to
# the end: a tb gap, not a snapshot that ended early.
jt = Job(hosts, gpus=2, n=150, seed=89)
jt.override('tb_step', lambda h, g, i, d: d if i < 100 else None)
tests.append(test('near miss: tb_step stops early but the exporters report to the end: not a truncated TSDB', jt,
                  facts(jt, extra={'tgs': {'degradation_onset_step': 120}}),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'observability-gaps/tsdb_last_step', 'status': 'clear'},
                                {'id': 'observability-gaps/tsdb_ends_before_the_drop', 'status': 'clear'}]},
                  families=OG_FAM, tb_host=hosts[0], tb_extra=TB))
tests.append(test('the TSDB ends before TGS fell: observability-gap, not a clean system', j,
                  facts(j, last_step=149, extra={'tgs': {'degradation_onset_step': 120}}),
                  {'root_cause': 'observability-gap', 'action': 'none', 'confidence': 'likely', 'exclude': [],
                   'findings': [{'id': 'observability-gaps/tsdb_last_step', 'status': 'fired'},
                                {'id': 'observability-gaps/tsdb_ends_before_the_drop', 'status': 'fired'}]},
                  families=OG_FAM, tb_host=hosts[0], tb_extra=TB))
# Near misses: the drop began inside the snapshot (its evidence is there), and a snapshot that
# misses only the job's last three minutes (the last scrapes before a job ends are lost anyway).
for name, last_step, onset, ended_early in [
        ('near miss: the TSDB ends early but after TGS fell: named, not the verdict', 149, 60, 'fired'),
        ('near miss: a TSDB that misses only the last three minutes has not ended early', 105, 103, 'clear')]:
    tests.append(test(name, j, facts(j, last_step=last_step, extra={'tgs': {'degradation_onset_step': onset}}),
                      {'root_cause': 'none', 'action': 'none',
                       'findings': [{'id': 'observability-gaps/tsdb_last_step', 'status': ended_early},
                                    {'id': 'observability-gaps/tsdb_ends_before_the_drop', 'status': 'clear'}]},
                      families=OG_FAM, tb_host=hosts[0], tb_extra=TB))

j = Job(hosts, gpus=2, n=100, seed=85)
j.override('hw_scrape_duration_seconds', lambda h, g, i, d: None if (i % 17 == 5) else d)
tests.append(test('near miss: occasional missed scrapes are not a gap', j, facts(j),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'observability-gaps/gap_hosts', 'status': 'clear'},
                                {'id': 'observability-gaps/telemetry_broken', 'status': 'clear'}]},
                  families=OG_FAM, tb_host=hosts[0], tb_extra=TB))

tests.append(test('a RAY=1 job without a TSDB: observability-gap, the log alone decides', j,
                  facts(j, status='completed'),
                  {'root_cause': 'observability-gap', 'action': 'none', 'confidence': 'likely',
                   'findings': [{'id': 'observability-gaps/no_tsdb', 'status': 'fired'}]},
                  no_series=True))

tests.append(test('near miss: a RAY=0 job has no TSDB by design', j, facts(j, ray_job=False),
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'observability-gaps/no_tsdb', 'status': 'clear'}]},
                  no_series=True))

# diagnose's own failure to read a TSDB (closed port, 5xx, deadline) is no fact about the job
failed_read = facts(j, status='completed')
failed_read['tsdb_state'] = 'failed'
tests.append(test('near miss: a RAY=1 job whose TSDB diagnose failed to read is no gap (the report is incomplete instead)',
                  j, failed_read,
                  {'root_cause': 'none', 'action': 'none',
                   'findings': [{'id': 'observability-gaps/no_tsdb', 'status': 'clear'}]},
                  no_series=True))
emit('observability-gaps', 'health.py', tests)
