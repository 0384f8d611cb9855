/* perfgate dashboard: page #/runs.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ runs */
async function pageRuns(r, index) {
  const runs = index.runs || [];
  const q = {suite: r.q.suite || '', tag: r.q.tag || '', status: r.q.status || '', kind: r.q.kind || ''};
  const setQ = (k, v) => go(link('runs', null, {...q, [k]: v}));
  const distinct = (f) => [...new Set(runs.flatMap(f))].sort(collator.compare);

  const controls = h(
      'div',
      {class: 'pg-controls'},
      select(
          'suite', 'f-suite', [['', '(all suites)'], ...(index.suites || []).map((s) => [s.name, s.name])], q.suite,
          (v) => setQ('suite', v)),
      select(
          'tag', 'f-tag', [['', '(any tag)'], ...distinct((x) => tagsOf(x)).map((t) => [t, t])], q.tag,
          (v) => setQ('tag', v)),
      select(
          'status', 'f-status', [['', '(any status)'], ...distinct((x) => [str(x.status)]).map((t) => [t, t])],
          q.status, (v) => setQ('status', v)),
      select(
          'kind', 'f-kind', [['', '(any kind)'], ...distinct((x) => [str(x.kind)]).filter(Boolean).map((t) => [t, t])],
          q.kind, (v) => setQ('kind', v)),
  );
  const rows = runs.filter(
      (x) => (!q.suite || x.suite === q.suite) && (!q.tag || tagsOf(x).includes(q.tag)) &&
          (!q.status || x.status === q.status) && (!q.kind || x.kind === q.kind));
  controls.append(h('span', {class: 'pg-count'}, `${rows.length} of ${runs.length} runs`));

  const view = h('div', null, h('h1', null, 'Runs'), controls);
  view.append(
      table(
          [
            {
              h: 'run',
              v: (x) => x.id,
              f: (x) => [runLink(x.id), h('div', {class: 'pg-small'}, runExtraLinks(x))],
              cls: 'nowrap'
            },
            {h: 'suite', v: (x) => x.suite, f: (x) => trendLink(x.suite, null, str(x.suite)), cls: 'label-s'},
            {h: 'started', v: (x) => x.started_at, f: (x) => fmtTime(x.started_at), cls: 'nowrap'},
            {
              h: 'duration',
              v: (x) => (isNum(x.ended_at) && isNum(x.started_at) && x.ended_at > 0 ? x.ended_at - x.started_at : null),
              f: (x) => (isNum(x.ended_at) && x.ended_at > 0 ? fmtDur(x.ended_at - x.started_at) : DASH),
              cls: 'num'
            },
            {
              h: 'status',
              v: (x) => x.status,
              f: (x) => [badge(x.status), x.kind && x.kind !== 'run' ? badge(x.kind) : null],
              cls: 'nowrap'
            },
            {h: 'configs', v: (x) => x.configs, cls: 'num'},
            {h: 'trials ok/fail', v: (x) => x.trials_failed, f: trialCounts, cls: 'num'},
            {
              h: 'commit · branch',
              v: (x) => x.commit,
              f: (x) =>
                  [h('code', {title: str(x.commit)}, shortCommit(x.commit)),
                   x.branch ? h('div', {class: 'pg-muted pg-small'}, str(x.branch)) : null],
              cls: 'label-s'
            },
            {h: 'tags', v: (x) => tagsOf(x).join(' '), f: (x) => tagsOf(x).map((t) => badge('tag', t)), cls: 'tags'},
            {h: 'gate', v: (x) => (x.gate ? x.gate.outcome : null), f: (x) => gateCell(x.gate, true), cls: 'gate'},
          ],
          rows,
          {empty: 'no runs match'},
          ),
  );
  return {name: 'runs', node: view};
}
