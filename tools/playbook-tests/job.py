"""A small job model producing the exporter/Ray/tb series of a run in promtool notation.

Every knob a test needs is a callable (host, sample_index) -> value or None (no sample), so a test
describes only what differs from a healthy run."""
import random

from common import *


class Job:
    def __init__(self, hosts, gpus=4, n=120, seed=7, ckpt_every=0, ckpt_len=0, writers=None, ip_base='10.50.0.', noise=True,
                 gpu_name=None):
        self.noise = noise
        self.gpu_name = gpu_name   # Ray's GpuDeviceName on its GPU series (absent when None, as in older Ray)
        self.hosts = hosts
        self.gpus = gpus
        self.n = n
        self.rng = random.Random(seed)
        self.ckpt_every = ckpt_every
        self.ckpt_len = ckpt_len
        self.writers = writers if writers is not None else hosts[: max(1, len(hosts) // 2)]
        self.ips = {h: f'{ip_base}{i + 21}' for i, h in enumerate(hosts)}
        self.overrides = {}

    def ckpt(self, i):
        return self.ckpt_every and i > 0 and (i % self.ckpt_every) < self.ckpt_len and i >= self.ckpt_every

    def noisy(self, base, spread, digits=1):
        if not self.noise:
            return base
        return round(base + self.rng.uniform(-spread, spread), digits)

    def override(self, metric, fn):
        """fn(host, gpu_or_None, i, default) -> value (None = missing sample)."""
        self.overrides[metric] = fn

    def _vals(self, metric, host, gpu, default_fn):
        out = []
        fn = self.overrides.get(metric)
        for i in range(self.n):
            d = default_fn(i)
            v = fn(host, gpu, i, d) if fn else d
            out.append('_' if v is None else fmt(v))
        return compress(out)

    def series(self, families=None, tb_host=None, tb_extra=None):
        out = []
        want = (lambda f: True) if families is None else (lambda f: f in families)
        for h in self.hosts:
            writer = h in self.writers
            for g in range(self.gpus):
                gl = dict(gpu=str(g))
                if want('hw_gpu_power_watts'):
                    out.append(series(hw('hw_gpu_power_watts', h, **gl), self._vals(
                        'hw_gpu_power_watts', h, g, lambda i: self.noisy(505 if self.ckpt(i) else 912, 9))))
                if want('hw_gpu_temperature_celsius'):
                    out.append(series(hw('hw_gpu_temperature_celsius', h, **gl), self._vals(
                        'hw_gpu_temperature_celsius', h, g, lambda i: self.noisy(63 if self.ckpt(i) else 85, 0.8))))
                if want('hw_gpu_clock_mhz'):
                    out.append(series(hw('hw_gpu_clock_mhz', h, type='sclk', **gl), self._vals(
                        'sclk', h, g, lambda i: self.noisy(2310, 60, 0))))
                if want('hw_gpu_vram_used_bytes'):
                    out.append(series(hw('hw_gpu_vram_used_bytes', h, **gl), self._vals(
                        'hw_gpu_vram_used_bytes', h, g, lambda i: 270479768371)))
                    out.append(series(hw('hw_gpu_vram_total_bytes', h, **gl), seg(309237645312, self.n)))
                if want('ray_node_gpus_utilization'):
                    named = {'GpuDeviceName': self.gpu_name} if self.gpu_name else {}
                    out.append(series(ray('ray_node_gpus_utilization', h, self.ips[h], GpuIndex=str(g), **named), self._vals(
                        'ray_node_gpus_utilization', h, g, lambda i: 35 if self.ckpt(i) else 100)))
                for block in ('umc', 'xgmi', 'gfx', 'mmhub', 'sdma'):
                    for kind in ('ue', 'ce'):
                        name = f'hw_gpu_ras_{block}_{kind}_total'
                        if want(name):
                            out.append(series(hw(name, h, **gl), self._vals(name, h, g, lambda i: 0)))
                for name in ('hw_gpu_pcie_fatal_total', 'hw_gpu_pcie_nonfatal_total'):
                    if want(name):
                        out.append(series(hw(name, h, **gl), self._vals(name, h, g, lambda i: 0)))
            rl = dict(device='ionic_0', port='1')
            base = 3_000_000 + 7919 * self.hosts.index(h)
            for name, start in (('hw_rdma_tx_retx_pkts_total', base), ('hw_rdma_tx_ack_timeout_total', base // 300),
                                ('hw_rdma_req_tx_retry_excd_err_total', 0), ('hw_rdma_req_rx_cqe_err_total', 0)):
                if want(name):
                    out.append(series(hw(name, h, **rl), self._vals(name, h, None, lambda i, s=start: s)))
            for name in ('hw_rdma_rx_cnp_pkts_total', 'hw_rdma_tx_cnp_pkts_total'):
                if want(name):
                    out.append(series(hw(name, h, **rl), self._vals(name, h, None, lambda i, b=base: b * 5 + 45 * i)))
            if want('hw_rdma_port_state'):
                out.append(series(hw('hw_rdma_port_state', h, **rl), self._vals('hw_rdma_port_state', h, None, lambda i: 1)))
            if want('hw_tcp_retransmits_total'):
                acc = [20_000_000 + 1000 * self.hosts.index(h)]
                def tcp(i, acc=acc, writer=writer):
                    acc[0] += (1500 * 30 if (writer and self.ckpt(i)) else 3)
                    return acc[0]
                out.append(series(hw('hw_tcp_retransmits_total', h), self._vals('hw_tcp_retransmits_total', h, None, tcp)))
            for name, fn in (
                    ('hw_oom_kills_total', lambda i: 1 if self.hosts.index(h) == 0 else 0),
                    ('hw_dmesg_gpu_errors_total', lambda i: 2),
                    ('hw_procs_blocked', lambda i, w=writer: 15 if (w and self.ckpt(i)) else 0),
                    ('hw_procs_running', lambda i: 18),
                    ('hw_io_pressure_full_pct', lambda i, w=writer: 62 if (w and self.ckpt(i)) else 0),
                    ('hw_mem_dirty_bytes', lambda i, w=writer: 1.2e10 if (w and self.ckpt(i)) else 2e7),
                    ('hw_mem_writeback_bytes', lambda i, w=writer: 3e9 if (w and self.ckpt(i)) else 1e5),
                    ('hw_scrape_duration_seconds', lambda i: self.noisy(0.11, 0.03, 3))):
                if want(name):
                    out.append(series(hw(name, h), self._vals(name, h, None, fn)))
            if want('ray_node_mem_used'):
                retained = [0]
                def mem(i, w=writer, retained=retained):
                    if w and self.ckpt(i):
                        retained[0] = 1.17e12
                    return int(2.05e11 + retained[0] + self.rng.uniform(-1e9, 1e9))
                out.append(series(ray('ray_node_mem_used', h, self.ips[h]), self._vals('ray_node_mem_used', h, None, mem)))
                out.append(series(ray('ray_node_mem_total', h, self.ips[h]), seg(3020000000000, self.n)))
        if tb_host:
            out += self.tb(tb_host, tb_extra or {})
        return out

    def tb(self, host, extra):
        """tb_step plus extra tb_* families (name -> fn(i) value); one real emission per sample."""
        out = [series(hw('tb_step', host), self._vals('tb_step', host, None, lambda i: i)),
               series(hw('tb_metrics_plugin_staleness_fill', host), seg(0, self.n))]
        for name, fn in extra.items():
            out.append(series(hw(name, host), compress([fmt(fn(i)) for i in range(self.n)])))
        return out

    def steps(self, seconds_fn, loss_fn=lambda s: round(3.0 - 0.005 * s, 3)):
        return [{'step': s, 'seconds': seconds_fn(s), 'loss': loss_fn(s), 'tokens_per_sec_per_device': 1300.0}
                for s in range(self.n)]


def fmt(v):
    if isinstance(v, str):
        return v
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def facts(job, status='completed', cls='', classes=None, last_step=None, extra=None, steps=None, ray_job=True):
    f = {'status': status, 'failure_class': cls,
         'classes': classes if classes is not None else ([{'failure_class': cls}] if cls else []),
         'header': {'hosts': job.hosts, 'nnodes': len(job.hosts), 'ray': ray_job},
         'progress': {'first_step': 0, 'last_step': job.n - 1 if last_step is None else last_step,
                      'step_time_seconds': 30.0}}
    if steps is not None:
        f['steps'] = steps
    if extra:
        for k, v in extra.items():
            if isinstance(v, dict) and isinstance(f.get(k), dict):
                f[k].update(v)
            else:
                f[k] = v
    return f
