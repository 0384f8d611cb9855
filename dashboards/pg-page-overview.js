/* perfgate dashboard: page #/overview.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ overview */
async function pageOverview(r, index) {
  const view = h('div');
  view.append(h('h1', null, 'Overview'));

  const suites = index.suites || [];
  view.append(h('h2', null, 'Latest run per suite'));
  view.append(
      table(
          [
            {h: 'suite', v: (s) => s.name, f: (s) => trendLink(s.name, null, str(s.name)), cls: 'label'},
            {h: 'runs', v: (s) => s.runs, cls: 'num'},
            {
              h: 'latest',
              v: (s) => s.latest_run,
              f: (s) => (s.latest_run != null ? runLink(s.latest_run) : DASH),
              cls: 'nowrap'
            },
            {
              h: 'status',
              v: (s) => (runById(index, s.latest_run) || {}).status,
              f: (s) => {
                const run = runById(index, s.latest_run);
                return run ? badge(run.status) : DASH;
              }
            },
            {
              h: 'started',
              v: (s) => (runById(index, s.latest_run) || {}).started_at,
              f: (s) => fmtTime((runById(index, s.latest_run) || {}).started_at),
              cls: 'nowrap'
            },
            {
              h: 'commit',
              v: (s) => (runById(index, s.latest_run) || {}).commit,
              f: (s) => {
                const run = runById(index, s.latest_run) || {};
                return h('code', {title: str(run.commit)}, shortCommit(run.commit));
              }
            },
            {
              h: 'trials ok / failed',
              v: (s) => (runById(index, s.latest_run) || {}).trials_failed,
              f: (s) => {
                const run = runById(index, s.latest_run);
                return run ? trialCounts(run) : DASH;
              },
              cls: 'nowrap'
            },
            {
              h: 'gate',
              f: (s) => {
                const run = runById(index, s.latest_run);
                return run ? gateCell(run.gate) : DASH;
              }
            },
            {
              h: '',
              f: (s) => {
                const run = runById(index, s.latest_run);
                return run ? runExtraLinks(run) : null;
              },
              cls: 'nowrap'
            },
          ],
          suites,
          {empty: 'no suites in the database'},
          ),
  );

  const regs = (index.regressions || []).slice().sort((a, b) => compareValues(b.at, a.at));
  const shownRegs = regs.slice(0, 25);
  view.append(
      h('h2', null, 'Recent regressions',
        regs.length > shownRegs.length ?
            h('span', {class: 'pg-muted'}, ` (latest ${shownRegs.length} of ${regs.length})`) :
            null));
  view.append(
      table(
          [
            {h: 'when', v: (x) => x.at, f: (x) => fmtTime(x.at), cls: 'nowrap'},
            {h: 'run', v: (x) => x.run, f: (x) => runLink(x.run)},
            {h: 'suite', v: (x) => x.suite, cls: 'label'},
            {h: 'configuration', v: (x) => x.label, cls: 'label'},
            {
              h: 'metric',
              v: (x) => x.metric,
              f: (x) => trendLink(x.suite, {metric: x.metric, config: x.label}, str(x.metric))
            },
            {h: 'baseline', v: (x) => x.baseline, f: (x) => withUnit(x.baseline, x.unit), cls: 'num'},
            {h: 'candidate', v: (x) => x.candidate, f: (x) => withUnit(x.candidate, x.unit), cls: 'num'},
            {h: 'change', v: (x) => x.change_pct, f: (x) => changeSpan(x.change_pct, null, true), cls: 'num'},
            {h: '', f: (x) => trendLink(x.suite, {metric: x.metric, config: x.label}, 'trend ↗'), cls: 'nowrap'},
          ],
          shownRegs,
          {empty: 'no regressions judged by a gate'},
          ),
  );

  const finds = index.soak_findings || [];
  view.append(h('h2', null, 'Soak findings'));
  view.append(
      table(
          [
            {h: 'run', v: (x) => x.run, f: (x) => h('a', {href: link('soak', x.run)}, `#${x.run}`)},
            {h: 'suite', v: (x) => x.suite, cls: 'label'},
            {h: 'configuration', v: (x) => x.label, cls: 'label'},
            {h: 'kind', v: (x) => x.kind, f: (x) => badge(x.kind)},
            {h: 'metric', v: (x) => x.metric, f: (x) => (x.metric ? h('code', null, x.metric) : DASH)},
            {h: 'summary', v: (x) => x.summary, cls: 'text'},
          ],
          finds,
          {empty: 'no soak findings'},
          ),
  );

  const failing = index.failing_trials || [];
  view.append(h('h2', null, 'Failing trials of the latest runs'));
  view.append(
      table(
          [
            {h: 'run', v: (x) => x.run, f: (x) => runLink(x.run)},
            {h: 'suite', v: (x) => x.suite, cls: 'label'},
            {h: 'configuration', v: (x) => x.label, cls: 'label'},
            {h: 'repeat', v: (x) => x.repeat, f: (x) => (isNum(x.repeat) ? String(x.repeat) : DASH), cls: 'num'},
            {h: 'status', v: (x) => x.status, f: (x) => badge(x.status)},
            {h: 'error', v: (x) => x.error, cls: 'text'},
          ],
          failing,
          {empty: 'every trial of the latest runs succeeded'},
          ),
  );
  return {name: 'overview', node: view};
}

function withUnit(v, unit) { return isNum(v) ? `${fmtNum(v)}${unit ? ` ${unit}` : ''}` : DASH; }

function trialCounts(run) {
  const failed = run.trials_failed || 0;
  return h(
      'span', null, h('span', {class: 'pg-change-good'}, String(run.trials_ok ?? DASH)), ' / ',
      h('span', {class: failed > 0 ? 'pg-change-bad' : 'pg-muted'}, String(run.trials_failed ?? DASH)));
}

function runExtraLinks(run) {
  const out = [];
  if (isNum(run.configs) && run.configs > 1) out.push(h('a', {href: link('sweep', run.id)}, 'sweep'));
  if (run.kind === 'soak') out.push(h('a', {href: link('soak', run.id)}, 'soak'));
  return out.flatMap((a, i) => (i ? [' · ', a] : [a]));
}
