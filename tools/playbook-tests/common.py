"""Helpers that write `diagnose test` files (promtool series notation) for the health, hang, OOM,
hardware, thermal, training, checkpoint and observability playbooks. Run `python3 <script>.py` from
anywhere; each script rewrites its playbooks/tests/<playbook>.test.yaml files deterministically."""
import os

import yaml

# playbooks/tests/ of this checkout; PLAYBOOK_TESTS_DIR writes them elsewhere (check.py compares
# that copy with the committed files).
TESTS_DIR = os.environ.get("PLAYBOOK_TESTS_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "playbooks", "tests"))

START = 1772366400  # 2026-03-01T12:00:00Z
INTERVAL = 30


def seg(value, n):
    """n samples of value (promtool: 'vx(n-1)')."""
    if n <= 0:
        return ''
    if n == 1:
        return f'{value}'
    return f'{value}x{n - 1}'


def ramp(start, step, n):
    if n == 1:
        return f'{start}'
    sign = '+' if step >= 0 else '-'
    return f'{start}{sign}{abs(step)}x{n - 1}'


def gaps(n):
    return '_' if n == 1 else f'_x{n}'


def join(*parts):
    return ' '.join(p for p in parts if p)


def labels(d):
    return '{' + ','.join(f'{k}="{v}"' for k, v in d.items()) + '}'


def hw(name, host, **extra):
    d = dict(extra)
    d['host'] = host
    d['instance'] = f'{host}:9400'
    d['job'] = 'node_hw'
    return name + labels(d)


def ray(name, host, ip, **extra):
    d = {'instance': f'{host}:55080', 'ip': ip, 'job': 'ray', 'SessionName': 'session_2026_03_01_12_00_00_000000_1'}
    d.update(extra)
    return name + labels(d)


def series(s, values):
    return {'series': s, 'values': values}


def tb_series(host, last_step, n_train, n_after, fill_every=5, extra=None):
    """tb_step and staleness fill: one real step per sample during training, then a fill every
    `fill_every` samples re-emitting the last step (staleness fill = 1)."""
    step_vals = [str(s) for s in range(0, n_train)]
    fill_vals = ['0'] * n_train
    for i in range(n_after):
        if (i + 1) % fill_every == 0:
            step_vals.append(str(n_train - 1))
            fill_vals.append('1')
        else:
            step_vals.append('_')
            fill_vals.append('_')
    out = [series(hw('tb_step', host), compress(step_vals)),
           series(hw('tb_metrics_plugin_staleness_fill', host), compress(fill_vals))]
    for name, vals in (extra or {}).items():
        out.append(series(hw(name, host), vals))
    return out


def compress(vals):
    """Compress a list of value strings: runs of equal values and of '_' use promtool's 'x'."""
    out = []
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[i]:
            j += 1
        n = j - i + 1
        if vals[i] == '_':
            out.append('_' if n == 1 else f'_x{n}')
        else:
            out.append(seg(vals[i], n))
        i = j + 1
    return ' '.join(out)


class Dumper(yaml.SafeDumper):
    pass


def _str_repr(dumper, data):
    if '\n' in data:
        return dumper.represent_scalar('tag:yaml.org,2002:str', data, style='|')
    return dumper.represent_scalar('tag:yaml.org,2002:str', data)


Dumper.add_representer(str, _str_repr)


def write(path, header, doc):
    with open(path, 'w') as f:
        f.write(header)
        yaml.dump(doc, f, Dumper=Dumper, sort_keys=False, width=120, default_flow_style=None)
