#!/usr/bin/env python3
"""Writes the sample dashboard data (data/*.js) that docs/dashboard.md describes.

assemble.sh runs it, so the front-end can be looked at without a database or
a C++ build; the data doubles as the concrete reading of the schema that the
generator (`perfgate dashboard`) has to match.

  python3 generate.py                 # sample/data (small; not kept in git)
  python3 generate.py --big --out D   # D/data: 1000-run trend, 3 soak trials
                                      # x 6 series x 2000 points (perf check)

Deterministic: a fixed seed, fixed timestamps.
"""
import argparse
import json
import math
import os
import random

# Strings that must show up as literal text in the page, never as markup.
XSS_WORKLOAD = '<img src=x onerror=alert(1)>'
XSS_PARAM = '"><script>alert(2)</script>'
UNICODE_WORKLOAD = '训练-ünïcödé 🚀'
LONG_WORKLOAD = 'megatron_gpt_pretrain_with_a_deliberately_very_long_workload_name_for_wrapping'
ODD_SUITE = 'ops/<b>β</b> & "q"'

T0 = 1_793_000_000  # 2026-10-27, unix seconds


def label_of(workload, params):
    # docs/dashboard.md: workload, a space, then key=value pairs sorted by key.
    flat = flatten(params)
    return ' '.join([workload] + [f'{k}={fmt_param(flat[k])}' for k in sorted(flat)])


def flatten(params, prefix=''):
    out = {}
    for k, v in params.items():
        key = f'{prefix}.{k}' if prefix else k
        if isinstance(v, dict):
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


def fmt_param(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    return str(v)


def r4(x):
    return None if x is None else round(x, 4)


class Builder:
    def __init__(self, big):
        self.big = big
        self.rng = random.Random(20261127)
        self.runs = []          # index rows, appended oldest first, reversed at the end
        self.files = {}         # key -> object
        self.next_trial = 1
        self.next_config = 1
        self.configs = {}       # label -> config id (stable across runs, like the db)
        self.regressions = []
        self.soak_findings = []
        self.failing = {}       # suite -> rows of its latest run
        self.trend_points = {}  # suite -> {(label, metric): series}

    # ---------------------------------------------------------------- helpers
    def config_id(self, label):
        if label not in self.configs:
            self.configs[label] = self.next_config
            self.next_config += 1
        return self.configs[label]

    def fingerprint(self, host):
        return {
            'arch': 'x86_64', 'cpu_cores': 2, 'cpu_model': 'AMD EPYC 7B13', 'hostname': host,
            'hostname_class': 'vm', 'kernel': '6.1.0-27-amd64', 'memory_gib': 24.0,
            'os': 'Debian GNU/Linux 12 (bookworm)', 'python': '3.11.2', 'torch': '2.1.0',
            'accelerators': [{'name': 'Ascend910B', 'hbm_gib': 64, 'driver': '24.1.rc2'}],
            'cann': '8.0.RC2', 'note': XSS_PARAM,
        }

    def add_run(self, *, rid, suite, started, status='completed', commit, branch='main', tags=(),
                kind='run', configs, trials, primary, gate=None, sweep=None, dur=600, host='ci-node-1'):
        params = sorted({k for c in configs for k in flatten(c['params'])})
        ok = sum(1 for t in trials if t['status'] == 'ok')
        record = {
            'id': rid, 'suite': suite, 'suite_path': f'suites/{suite}.yaml',
            'description': f'{suite}: sample run for the dashboard front-end',
            'started_at': started, 'ended_at': started + dur, 'status': status, 'host': host,
            'commit': commit, 'branch': branch, 'tags': list(tags), 'kind': kind, 'seed': 1000 + rid,
            'argv': f'perfgate run suites/{suite}.yaml --tag nightly --commit {commit[:7]}',
            'perfgate_version': '0.4.0', 'artifacts_dir': f'results/runs/{rid}',
            'fingerprint': self.fingerprint(host),
            'env': {'OMP_NUM_THREADS': '2', 'TASK_QUEUE_ENABLE': '1', 'ASCEND_RT_VISIBLE_DEVICES': '0,1',
                    'WEIRD': XSS_PARAM},
        }
        gate_index = None
        if gate:
            counts = {k: 0 for k in ('regression', 'improvement', 'unchanged', 'inconclusive', 'missing', 'failed')}
            for c in gate['comparisons']:
                counts[c['verdict']] += 1
            outcome = ('regression' if counts['regression'] or counts['failed'] else
                       'inconclusive' if counts['inconclusive'] or counts['missing'] else 'pass')
            gate['outcome'] = outcome
            gate_index = {'id': gate['id'], 'outcome': outcome, 'baseline': gate['baseline'], 'counts': counts}
            for c in gate['comparisons']:
                if c['verdict'] == 'regression':
                    self.regressions.append({
                        'run': rid, 'suite': suite, 'workload': c['workload'], 'label': c['label'],
                        'metric': c['metric'], 'unit': c['unit'], 'baseline': c['baseline'],
                        'candidate': c['candidate'], 'change_pct': c['change_pct'], 'gate': gate['id'],
                        'at': started + dur + 30})
        self.runs.append({
            'id': rid, 'suite': suite, 'started_at': started, 'ended_at': started + dur, 'status': status,
            'commit': commit, 'branch': branch, 'tags': list(tags), 'host': host, 'trials_ok': ok,
            'trials_failed': len(trials) - ok, 'configs': len(configs), 'kind': kind, 'gate': gate_index})
        self.files[f'run-{rid}'] = {
            'run': record, 'primary': primary, 'params': params, 'configs': configs, 'trials': trials,
            'sweep': sweep, 'gate': gate}
        for i, t in enumerate(sorted(trials, key=lambda t: (t['repeat'], t['id']))):
            t['seq'] = i  # trials run interleaved: repeat-major order
        self.failing[suite] = [
            {'run': rid, 'suite': suite, 'label': t['label'], 'repeat': t['repeat'], 'status': t['status'],
             'error': t['error']} for t in trials if t['status'] != 'ok']

    def metric_row(self, name, unit, better, values, harness=False):
        vals = sorted(values)
        n = len(vals)
        if n == 0:
            return {'metric': name, 'unit': unit, 'better': better, 'n': 0, 'median': None,
                    'ci_low': None, 'ci_high': None, 'cv': None, 'harness': harness}
        med = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
        mean = sum(vals) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1)) if n > 1 else None
        return {'metric': name, 'unit': unit, 'better': better, 'n': n, 'median': r4(med),
                'ci_low': r4(vals[max(0, n // 2 - 1)]) if n > 2 else None,
                'ci_high': r4(vals[min(n - 1, n // 2 + 1)]) if n > 2 else None,
                'cv': r4(sd / mean) if sd is not None and mean else None, 'harness': harness}

    def make_trials(self, label, cfg_id, repeats, fail=None):
        out = []
        for rep in range(repeats):
            t = {'id': self.next_trial, 'seq': 0, 'repeat': rep, 'config': cfg_id, 'label': label,
                 'status': 'ok', 'exit_code': 0, 'signal': 0, 'wall_s': r4(30 + self.rng.random() * 5),
                 'error': '', 'notes': '', 'log_dir': f'results/runs/x/trial-{self.next_trial}'}
            self.next_trial += 1
            if fail and rep == repeats - 1:
                t.update(fail)
            out.append(t)
        return out

    def trend_add(self, suite, workload, params, metric, unit, better, point):
        label = label_of(workload, params)
        s = self.trend_points.setdefault(suite, {}).setdefault((label, metric), {
            'workload': workload, 'label': label, 'params': params, 'metric': metric, 'unit': unit,
            'better': better, 'points': [], 'changes': [], 'regressions': [], 'baseline': None})
        s['points'].append(point)
        return s

    # ---------------------------------------------------------------- suites
    def nightly(self):
        n_runs = 1000 if self.big else 50
        graph_modes = ['graph', 'eager']
        extra = [{'precision': p, 'bucket_mb': b} for p in ('fp32', 'bf16') for b in (5, 25, 50, 100, 200)] \
            if self.big else [{'precision': 'fp32', 'bucket_mb': 25}]
        cfgs = [dict(graph_mode=g, **e) for g in graph_modes for e in extra]
        metrics = [('step_time_ms', 'ms', 'lower'), ('throughput', 'samples/s', 'higher'),
                   ('peak_rss_mb', 'MB', 'lower')]
        change_at = int(n_runs * 0.7)
        rid0 = 1
        for i in range(n_runs):
            rid = rid0 + i
            started = T0 + i * 86400 // (20 if self.big else 1)
            commit = f'{(0x9e3779b1 * (i + 7)) & 0xffffffff:08x}{i:032x}'[:40]
            configs, trials = [], []
            last = i == n_runs - 1
            for ci, p in enumerate(cfgs):
                wl = 'train'
                label = label_of(wl, p)
                cid = self.config_id(label)
                base = 40 + ci * 3 + (10 if p['graph_mode'] == 'eager' else 0)
                slow = 1.08 if (i >= change_at and p['graph_mode'] == 'graph' and ci == 0) else 1.0
                fail = None
                if last and ci == 1:
                    fail = {'status': 'timed_out', 'exit_code': -1, 'signal': 9,
                            'error': 'timeout after 20m; process group killed (SIGKILL)',
                            'notes': '2 malformed metric lines (first at line 17)'}
                tr = self.make_trials(label, cid, 5, fail)
                trials += tr
                vals = [base * slow * (1 + self.rng.gauss(0, 0.012)) for t in tr if t['status'] == 'ok']
                mets = [self.metric_row('step_time_ms', 'ms', 'lower', vals),
                        self.metric_row('throughput', 'samples/s', 'higher', [32000 / v for v in vals]),
                        self.metric_row('peak_rss_mb', 'MB', 'lower',
                                        [2048 + ci * 10 + self.rng.gauss(0, 3) for _ in vals]),
                        self.metric_row('wall_time_s', 's', 'lower', [t['wall_s'] for t in tr], harness=True)]
                configs.append({'id': cid, 'workload': wl, 'label': label, 'params': p,
                                'trials_ok': len(vals), 'trials_failed': len(tr) - len(vals), 'metrics': mets})
                for m in mets:
                    if m['harness']:
                        continue
                    s = self.trend_add('nightly', wl, p, m['metric'], m['unit'], m['better'],
                                       [started, m['median'], m['ci_low'], m['ci_high'], rid, commit[:12]])
                    if i == change_at and slow > 1 and m['metric'] in ('step_time_ms', 'throughput'):
                        before = base if m['metric'] == 'step_time_ms' else 32000 / base
                        after = before * slow if m['metric'] == 'step_time_ms' else before / slow
                        s['changes'].append({'run': rid, 't': started, 'before': r4(before), 'after': r4(after),
                                             'change_pct': r4((after - before) / before * 100), 'p': 0.0004,
                                             'regression': True})
                    if i == change_at // 3 and ci == 0 and m['metric'] == 'peak_rss_mb':
                        s['changes'].append({'run': rid, 't': started, 'before': 2040.0, 'after': 2049.0,
                                             'change_pct': 0.44, 'p': 0.03, 'regression': False})
            gate = None
            if i in (change_at, n_runs - 1) or i == n_runs - 2:
                comps = []
                for c in configs:
                    for m in c['metrics']:
                        if m['harness']:
                            continue
                        regressed = (c['params']['graph_mode'] == 'graph' and c is configs[0] and i >= change_at
                                     and m['metric'] in ('step_time_ms', 'throughput'))
                        verdict = 'regression' if regressed else 'unchanged'
                        if m['median'] is None:
                            verdict = 'failed'
                        elif c is configs[-1] and m['metric'] == 'peak_rss_mb':
                            verdict = 'inconclusive'
                        elif c is configs[-1] and m['metric'] == 'throughput' and not self.big:
                            verdict = 'improvement'
                        cand = m['median']
                        basev = None if cand is None else (cand / 1.08 if regressed and m['metric'] == 'step_time_ms'
                                                           else cand * 1.08 if regressed else cand * 0.999)
                        chg = None if cand is None else (cand - basev) / basev * 100
                        comps.append({'workload': c['workload'], 'label': c['label'], 'metric': m['metric'],
                                      'unit': m['unit'], 'verdict': verdict, 'baseline': r4(basev),
                                      'candidate': cand, 'change_pct': r4(chg),
                                      'ci_low_pct': None if chg is None else r4(chg - 1.5),
                                      'ci_high_pct': None if chg is None else r4(chg + 1.5),
                                      'p_adjusted': 0.0021 if regressed else 0.61, 'threshold_pct': 3.0,
                                      'note': 'needs ~9 more trials to decide' if verdict == 'inconclusive' else ''})
                gate = {'id': 100 + i, 'baseline': 'tag:nightly,last:3',
                        'baseline_runs': [rid - 3, rid - 2, rid - 1], 'comparisons': comps}
            self.add_run(rid=rid, suite='nightly', started=started, commit=commit, tags=['nightly'],
                         configs=configs, trials=trials, primary='step_time_ms', gate=gate)
            if gate:
                for c in gate['comparisons']:
                    if c['verdict'] == 'regression':
                        key = (c['label'], c['metric'])
                        self.trend_points['nightly'][key]['regressions'].append(rid)
        # the latest gate's baseline band: baseline median +- threshold
        for (label, metric), s in self.trend_points['nightly'].items():
            pts = [p[1] for p in s['points'][change_at - 3:change_at] if p[1] is not None]
            if pts:
                med = sorted(pts)[len(pts) // 2]
                s['baseline'] = {'lo': r4(med * 0.97), 'hi': r4(med * 1.03)}
        return rid0 + n_runs

    def sweep(self, rid, started, latest=True):
        rows = []
        for b in (5, 25, 50, 100):
            for w in (2, 4, 8):
                rows.append(('train', {'bucket_mb': b, 'dataloader': {'num_workers': w, 'prefetch': w}}))
        rows.append((XSS_WORKLOAD, {'bucket_mb': 25, 'dataloader': {'num_workers': 2, 'prefetch': 2},
                                    'tag': XSS_PARAM}))
        rows.append((UNICODE_WORKLOAD, {'bucket_mb': 50, 'dataloader': {'num_workers': 4, 'prefetch': 4},
                                        'mode': 'ñandú-模式'}))
        rows.append((LONG_WORKLOAD, {'bucket_mb': 100, 'dataloader': {'num_workers': 8, 'prefetch': 8},
                                     'pipeline_model_parallel_size': 4, 'tensor_model_parallel_size': 2}))
        configs, trials = [], []
        for wl, p in rows:
            label = label_of(wl, p)
            cid = self.config_id(label)
            b = p['bucket_mb']
            w = p['dataloader']['num_workers']
            # allreduce overhead falls with bigger buckets until overlap is lost; workers help until 4
            base = 30 + 40 / b * 5 + (b / 100) ** 2 * 6 + {2: 6, 4: 0, 8: 0.5}[w]
            base *= 1.0 if latest else 1.02 + 0.01 * self.rng.random()
            fail = None
            if wl == XSS_WORKLOAD and latest:
                fail = {'status': 'failed', 'exit_code': 1, 'signal': 0,
                        'error': 'Traceback: ValueError: bad value "><script>alert(2)</script> <b>not bold</b>',
                        'notes': XSS_WORKLOAD, 'log_dir': f'results/runs/{rid}/{XSS_PARAM}'}
            tr = self.make_trials(label, cid, 5, fail)
            trials += tr
            vals = [base * (1 + self.rng.gauss(0, 0.01)) for t in tr if t['status'] == 'ok']
            if wl == UNICODE_WORKLOAD:
                vals = vals[:1]  # n=1: no interval, no CV -> nulls
            mets = [self.metric_row('step_time_ms', 'ms', 'lower', vals),
                    self.metric_row('throughput', 'samples/s', 'higher', [32000 / v for v in vals]),
                    self.metric_row('allreduce_ms', 'ms', 'lower', [40 / b * 5 + self.rng.random() for _ in vals]),
                    self.metric_row('loss_scale', '', 'none', [65536.0 for _ in vals]),
                    self.metric_row('wall_time_s', 's', 'lower', [t['wall_s'] for t in tr], harness=True)]
            configs.append({'id': cid, 'workload': wl, 'label': label, 'params': p, 'trials_ok': len(vals),
                            'trials_failed': len(tr) - len(vals), 'metrics': mets})
            for m in mets[:2]:
                self.trend_add('sweep-bucket', wl, p, m['metric'], m['unit'], m['better'],
                               [started, m['median'], m['ci_low'], m['ci_high'], rid, f'c0ffee{rid:02d}'])
        ranked = sorted(([c['id'], c['label'], c['metrics'][0]] for c in configs if c['metrics'][0]['median'] is not None),
                        key=lambda x: x[2]['median'])
        sweep = {'metric': 'step_time_ms', 'better': 'lower',
                 'ranked': [{'config': cid, 'label': lab, 'median': m['median'], 'ci_low': m['ci_low'],
                             'ci_high': m['ci_high'], 'n': m['n']} for cid, lab, m in ranked],
                 'best': ranked[0][0], 'runner_up': ranked[1][0],
                 'best_vs_runner_up': {'p': 0.0079, 'significant': True,
                                       # best relative to runner-up, as the generator writes it
                                       'change_pct': r4((ranked[0][2]['median'] / ranked[1][2]['median'] - 1) * 100)}}
        gate = None if not latest else {'id': 900, 'baseline': 'tag:sweep,last:1', 'baseline_runs': [rid - 1], 'comparisons': [
            {'workload': XSS_WORKLOAD, 'label': label_of(XSS_WORKLOAD, rows[12][1]), 'metric': 'step_time_ms',
             'unit': 'ms', 'verdict': 'regression', 'baseline': 40.1, 'candidate': 44.9, 'change_pct': 11.97,
             'ci_low_pct': 8.1, 'ci_high_pct': 15.2, 'p_adjusted': 0.004, 'threshold_pct': 3.0,
             'note': XSS_PARAM},
            {'workload': 'train', 'label': configs[0]['label'], 'metric': 'step_time_ms', 'unit': 'ms',
             'verdict': 'missing', 'baseline': 70.2, 'candidate': None, 'change_pct': None, 'ci_low_pct': None,
             'ci_high_pct': None, 'p_adjusted': None, 'threshold_pct': 3.0, 'note': 'no trials in the baseline'},
            {'workload': 'train', 'label': configs[4]['label'], 'metric': 'throughput', 'unit': 'samples/s',
             'verdict': 'improvement', 'baseline': 900.0, 'candidate': 955.5, 'change_pct': 6.17,
             'ci_low_pct': 4.0, 'ci_high_pct': 8.3, 'p_adjusted': 0.01, 'threshold_pct': 3.0, 'note': ''},
        ]}
        if gate:
            # the regression judged above, on the trend of that configuration
            self.trend_points['sweep-bucket'][(gate['comparisons'][0]['label'], 'step_time_ms')]['regressions'].append(rid)
        self.add_run(rid=rid, suite='sweep-bucket', started=started, commit=f'c0ffee{rid:02d}' * 5,
                     branch='feature/<bucket>', tags=['sweep', XSS_WORKLOAD], configs=configs, trials=trials,
                     primary='step_time_ms', sweep=sweep, gate=gate, dur=5400)

    def soak(self, rid, started):
        n_trials = 3 if self.big else 2
        n_points = 2000 if self.big else 3000
        duration = 24 * 3600.0 if self.big else 8 * 3600.0
        window = 600
        wl = 'train'
        configs, trials, soak_trials = [], [], []
        for ti in range(n_trials):
            p = {'graph_mode': 'graph', 'faults': ['none', 'staircase+stalls', 'leak'][ti % 3]}
            label = label_of(wl, p)
            cid = self.config_id(label)
            tid = self.next_trial
            self.next_trial += 1
            hang = ti == 1
            end = duration * (0.8 if hang else 1.0)
            ts = [end * k / (n_points - 1) for k in range(n_points)]
            step_at = duration * 0.45
            series = []
            stall_ev = []

            def mk(metric, unit, memory, fn, noise):
                pts = []
                for k, t in enumerate(ts):
                    v = fn(t) * (1 + self.rng.gauss(0, noise))
                    pts.append([round(t, 2), r4(v)])
                return {'metric': metric, 'unit': unit, 'memory': memory, 'n': int(end / 0.05), 'points': pts}

            staircase = ti == 1
            st = mk('step_time_ms', 'ms', False,
                    lambda t: 50 * (1.12 if staircase and t > step_at else 1) * (1 + 0.01 * t / 3600), 0.01)
            if staircase:
                for k in (400, 1100, 1900, 2500):
                    if k < len(st['points']):
                        st['points'][k][1] = r4(st['points'][k][1] * 9)
                        stall_ev.append({'t': st['points'][k][0], 'value': st['points'][k][1],
                                         'note': f'{9.0:.1f}x rolling median'})
            series.append(st)
            series.append(mk('throughput', 'samples/s', False,
                             lambda t: 640 / (1.12 if staircase and t > step_at else 1), 0.01))
            leak = 12.0 if ti == 2 else 0.4
            series.append(mk('host_rss_mb', 'MB', True, lambda t: 3100 + leak * t / 3600, 0.0005))
            series.append(mk('npu0_hbm_mb', 'MB', True, lambda t: 30500 + 0.1 * t / 3600, 0.0002))
            series.append(mk('loss', '', False, lambda t: 2.3 * math.exp(-t / 20000) + 0.7, 0.02))
            series.append(mk('npu0_aicore_pct', '%', False, lambda t: 82, 0.03))
            findings = []
            for s in series:
                vals = [p_[1] for p_ in s['points']]
                w = max(1, int(len(vals) * window / end))
                first = sum(vals[:w]) / w
                last = sum(vals[-w:]) / w
                slope = (last - first) / (end / 3600) if end > 0 else None
                s.update({'first_window': r4(first), 'last_window': r4(last), 'slope_per_h': r4(slope),
                          'drift_pct_per_h': r4(slope / first * 100) if first else None,
                          'trend_p': 0.0001 if abs(slope or 0) > 0.1 else 0.4, 'steps': []})
            if staircase:
                st['steps'] = [{'t': step_at, 'before': 50.9, 'after': 57.0, 'change_pct': 12.0}]
                series[1]['steps'] = [{'t': step_at, 'before': 640.0, 'after': 571.4, 'change_pct': -10.7}]
                findings.append({'kind': 'staircase', 'metric': 'step_time_ms', 'value': 12.0, 'unit': '%',
                                 'summary': 'step_time_ms steps +12.0 % at 3:36:00 (50.9 -> 57 ms, p 1e-06)',
                                 'evidence': [{'t': step_at, 'value': 57.0, 'note': 'step'}]})
                findings.append({'kind': 'stalls', 'metric': 'step_time_ms', 'value': len(stall_ev), 'unit': 'steps',
                                 'summary': f'{len(stall_ev)} stall(s) in step_time_ms: steps over 5x their rolling '
                                            'median, the worst 9.0x', 'evidence': stall_ev})
            if hang:
                findings.append({'kind': 'hang', 'metric': '', 'value': end, 'unit': 's',
                                 'summary': 'no step for 900 s (hang timeout); process group killed',
                                 'evidence': [{'t': end, 'value': end, 'note': 'last step'}]})
            if ti == 2:
                rss = series[2]
                findings.append({'kind': 'memory_growth', 'metric': 'host_rss_mb', 'value': rss['slope_per_h'],
                                 'unit': 'MB/h', 'summary': f'host_rss_mb grows {rss["slope_per_h"]:.1f} MB/h '
                                 f'(95% CI 11.2 to 12.8; trend p 1e-04): {rss["first_window"]:.1f} -> '
                                 f'{rss["last_window"]:.1f} MB', 'evidence': []})
            if ti == 0:
                findings.append({'kind': 'drift', 'metric': 'step_time_ms', 'value': st['drift_pct_per_h'],
                                 'unit': '%/h', 'summary': f'step_time_ms drifts {st["drift_pct_per_h"]:+.2f} %/h '
                                 '(trend p 1e-04): 50.2 -> 54.3 ms', 'evidence': []})
            status = 'timed_out' if hang else 'ok'
            err = 'hang: no step for 900 s; SIGKILL to the process group' if hang else ''
            soak_trials.append({'trial': tid, 'label': label, 'status': status, 'error': err,
                                'wall_s': r4(end), 'steps': int(end / 0.05), 'series': series,
                                'findings': findings})
            trials.append({'id': tid, 'seq': ti, 'repeat': 0, 'config': cid, 'label': label, 'status': status,
                           'exit_code': -1 if hang else 0, 'signal': 9 if hang else 0, 'wall_s': r4(end),
                           'error': err, 'notes': '', 'log_dir': f'results/runs/{rid}/trial-{tid}'})
            mets = [self.metric_row('step_time_ms', 'ms', 'lower', [v for _, v in st['points']][::50])]
            configs.append({'id': cid, 'workload': wl, 'label': label, 'params': p,
                            'trials_ok': 0 if hang else 1, 'trials_failed': 1 if hang else 0, 'metrics': mets})
            for f in findings:
                self.soak_findings.append({'run': rid, 'suite': 'soak', 'label': label, 'kind': f['kind'],
                                           'metric': f['metric'], 'summary': f['summary']})
            self.trend_add('soak', wl, p, 'step_time_ms', 'ms', 'lower',
                           [started, mets[0]['median'], mets[0]['ci_low'], mets[0]['ci_high'], rid, 'deadbeef00'])
        self.add_run(rid=rid, suite='soak', started=started, commit='deadbeef' * 5, tags=['soak', 'release-1.2'],
                     kind='soak', configs=configs, trials=trials, primary='step_time_ms', dur=int(duration) + 60,
                     status='completed')
        self.files[f'soak-{rid}'] = {'run': rid, 'suite': 'soak', 'window_s': window, 'trials': soak_trials}

    def ops_import(self, rid0, n):
        for i in range(n):
            rid = rid0 + i
            started = T0 - 86400 * (n - i)
            configs, trials = [], []
            for impl in ('simd', 'scalar', XSS_PARAM):
                p = {'impl': impl}
                label = label_of('BM_matmul/1024', p)
                cid = self.config_id(label)
                v = {'simd': 1.2, 'scalar': 4.8}.get(impl, 2.0) * (1 + self.rng.gauss(0, 0.01))
                mets = [self.metric_row('real_time_ns', 'ns', 'lower', [v * 1e6]),
                        self.metric_row('cpu_time_ns', 'ns', 'lower', [v * 0.98e6])]
                tr = self.make_trials(label, cid, 1)
                trials += tr
                configs.append({'id': cid, 'workload': 'BM_matmul/1024', 'label': label, 'params': p,
                                'trials_ok': 1, 'trials_failed': 0, 'metrics': mets})
                self.trend_add(ODD_SUITE, 'BM_matmul/1024', p, 'real_time_ns', 'ns', 'lower',
                               [started, mets[0]['median'], None, None, rid, None])
            self.add_run(rid=rid, suite=ODD_SUITE, started=started, commit='', branch='', tags=[],
                         kind='import', configs=configs, trials=trials, primary='real_time_ns', dur=1,
                         status='interrupted' if i == n - 1 else 'completed', host='laptop «ü»')

    # ---------------------------------------------------------------- output
    def build(self):
        nxt = self.nightly()
        self.ops_import(nxt, 4)
        nxt += 4
        self.sweep(nxt, T0 + 38 * 86400, latest=False)
        self.sweep(nxt + 1, T0 + 45 * 86400, latest=False)
        self.sweep(nxt + 2, T0 + 52 * 86400)
        self.soak(nxt + 3, T0 + 53 * 86400)
        self.runs.sort(key=lambda r: (r['started_at'], r['id']), reverse=True)
        suites = []
        for ti, name in enumerate(['nightly', 'sweep-bucket', 'soak', ODD_SUITE]):
            rs = [r for r in self.runs if r['suite'] == name]
            series = list(self.trend_points[name].values())
            key = f'trend-{ti}'
            self.files[key] = {'suite': name, 'series': series}
            metrics = []
            for s in series:
                if s['metric'] not in metrics:
                    metrics.append(s['metric'])
            suites.append({'name': name, 'runs': len(rs), 'latest_run': rs[0]['id'], 'trend': key,
                           'metrics': metrics})
        failing = [t for s in suites for t in self.failing.get(s['name'], [])]
        self.files['index'] = {
            'generated_at': T0 + 54 * 86400, 'perfgate_version': '0.4.0',
            'db': 'results/perfgate.db', 'suites': suites, 'runs': self.runs,
            'regressions': sorted(self.regressions, key=lambda r: -r['at']),
            'soak_findings': self.soak_findings, 'failing_trials': failing}

    def write(self, out):
        os.makedirs(out, exist_ok=True)
        for name in os.listdir(out):  # no stale files from an earlier layout
            if name.endswith('.js'):
                os.remove(os.path.join(out, name))
        for key, obj in self.files.items():
            # UTF-8 as is; the page declares charset=utf-8, which is what
            # <script src> files are decoded with.
            text = json.dumps(obj, separators=(',', ':'), ensure_ascii=False, allow_nan=False)
            with open(os.path.join(out, f'{key}.js'), 'w', encoding='utf-8') as f:
                f.write(f'PG.receive({json.dumps(key)},{text});\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--big', action='store_true')
    ap.add_argument('--out', default=os.path.join(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args()
    b = Builder(a.big)
    b.build()
    b.write(os.path.join(a.out, 'data'))


if __name__ == '__main__':
    main()
