/* perfgate dashboard: page #/run/<id> and its gate section.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ run */
function runKey(id) {
  const s = String(id);
  if (!/^\d+$/.test(s)) throw new DataError(`"${s}" is not a run id.`);
  return `run-${s}`;
}

function metricOrder(primary) {
  return (a, b) => {
    const pa = a.metric === primary ? 0 : a.harness ? 2 : 1;
    const pb = b.metric === primary ? 0 : b.harness ? 2 : 1;
    return pa - pb || collator.compare(str(a.metric), str(b.metric));
  };
}

async function pageRun(r, index) {
  const data = await need(runKey(r.arg));
  const run = data.run || {};
  const id = run.id ?? r.arg;
  const irow = runById(index, id) || {};
  const view = h('div');
  view.append(h('h1', null, `Run #${id} `, h('span', {class: 'pg-muted'}, '— '), str(run.suite ?? irow.suite)));
  const configs = data.configs || [];
  const kind = run.kind ?? irow.kind;
  view.append(
      subline(
          badge(run.status ?? irow.status),
          h('span', null, fmtTime(run.started_at)),
          h('span', null, 'commit ', h('code', {title: str(run.commit)}, shortCommit(run.commit ?? irow.commit))),
          trendLink(run.suite ?? irow.suite, null, 'trends'),
          configs.length > 1 ? h('a', {href: link('sweep', id)}, 'sweep ranking & heatmap') : null,
          kind === 'soak' ? h('a', {href: link('soak', id)}, 'soak series') : null,
          ),
  );

  // The record's scalar fields; objects (fingerprint, env, plan) get their own tables.
  const scalars = {};
  const objects = {};
  for (const [k, v] of Object.entries(run)) {
    if (v !== null && typeof v === 'object' && !Array.isArray(v))
      objects[k] = v;
    else if (k === 'started_at' || k === 'ended_at')
      scalars[k] = fmtTime(v);
    else
      scalars[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  if (isNum(run.started_at) && isNum(run.ended_at) && run.ended_at > 0)
    scalars.duration = fmtDur(run.ended_at - run.started_at);

  const suite = run.suite ?? irow.suite;
  // Configurations x metrics: one row per configuration, one column per
  // metric (primary first, harness-measured last); each cell holds the
  // median, its 95% interval and the CV.
  view.append(h('h2', null, 'Configurations and metrics'));
  const mInfo = new Map();
  for (const c of configs)
    for (const m of c.metrics || [])
      if (!mInfo.has(m.metric)) mInfo.set(m.metric, m);
  const mList = [...mInfo.values()].sort(metricOrder(data.primary));
  const metricOf = (c, name) => (c.metrics || []).find((m) => m.metric === name);
  view.append(
    table(
      [
        { h: 'configuration', v: (c) => c.label, f: (c) => [str(c.label), h('div', { class: 'pg-muted pg-small' }, `${c.trials_ok ?? DASH} ok / ${c.trials_failed ?? DASH} failed`)], cls: 'label' },
        ...mList.map((mi) => ({
          h: h('span', { title: `${mi.metric}${mi.unit ? ` (${mi.unit})` : ''}; ${mi.better || 'none'} is better${mi.harness ? '; measured by the harness' : ''}` },
            trendLink(suite, { metric: mi.metric }, str(mi.metric)), h('div', { class: 'pg-muted pg-small' }, [mi.unit ? str(mi.unit) : null, mi.metric === data.primary ? 'primary' : null, mi.harness ? 'harness' : null].filter(Boolean).join(' · ') || '\u00a0')),
          v: (c) => (metricOf(c, mi.metric) || {}).median,
          f: (c) => {
            const m = metricOf(c, mi.metric);
            if (!m) return '';
            return [
              h('a', { class: 'pg-plain', href: link('trend', suite, { metric: mi.metric, config: c.label }), title: `n=${m.n ?? DASH}; trend of this configuration` }, fmtNum(m.median)),
              h('div', { class: 'pg-muted pg-small' }, fmtInterval(m.ci_low, m.ci_high)),
              h('div', { class: 'pg-muted pg-small' }, `CV ${fmtCv(m.cv)} · n ${isNum(m.n) ? m.n : DASH}`),
            ];
          },
          cls: `num${mi.harness ? ' pg-harness' : ''}`,
        })),
      ],
      configs,
      { empty: 'no configurations' },
    ),
  );

  const trials = (data.trials || []).slice().sort((a, b) => compareValues(a.seq, b.seq));
  view.append(h('h2', null, 'Trials'));
  view.append(
      table(
          [
            {h: 'seq', v: (t) => t.seq, f: (t) => (isNum(t.seq) ? String(t.seq) : DASH), cls: 'num'},
            {h: 'trial', v: (t) => t.id, f: (t) => (t.id != null ? `#${t.id}` : DASH), cls: 'num'},
            {h: 'configuration', v: (t) => t.label, cls: 'label'},
            {h: 'repeat', v: (t) => t.repeat, f: (t) => (isNum(t.repeat) ? String(t.repeat) : DASH), cls: 'num'},
            {h: 'status', v: (t) => t.status, f: (t) => badge(t.status)},
            {h: 'exit', v: (t) => t.exit_code, f: (t) => (isNum(t.exit_code) ? String(t.exit_code) : DASH), cls: 'num'},
            {
              h: 'signal',
              v: (t) => t.signal,
              f: (t) => (isNum(t.signal) && t.signal !== 0 ? String(t.signal) : DASH),
              cls: 'num'
            },
            {h: 'wall', v: (t) => t.wall_s, f: (t) => fmtDur(t.wall_s), cls: 'num'},
            {h: 'error', v: (t) => t.error, cls: 'text'},
            {h: 'notes', v: (t) => t.notes, cls: 'text'},
            {h: 'logs', v: (t) => t.log_dir, f: (t) => logLinks(t.log_dir), cls: 'path'},
          ],
          trials,
          {empty: 'no trials', rowClass: (t) => (t.status && t.status !== 'ok' ? 'pg-failed' : '')},
          ),
  );

  if (data.gate) view.append(gateSection(data.gate, suite));

  view.append(h('h2', null, 'Run record'));
  view.append(kvTable(scalars));
  const objKeys = Object.keys(objects).sort(
      (a, b) =>
          (a === 'fingerprint'     ? -1 :
               b === 'fingerprint' ? 1 :
               a === 'env'         ? -1 :
               b === 'env'         ? 1 :
                                     collator.compare(a, b)));
  const grid = h('div', {class: 'pg-grid2'});
  for (const k of objKeys) {
    grid.append(
        h('div', null,
          h('h2', null,
            k === 'env'             ? 'Environment (env)' :
                k === 'fingerprint' ? 'Fingerprint' :
                                      k),
          kvTable(objects[k])));
  }
  view.append(grid);
  return {name: 'run', node: view};
}

// Links to a trial's stdout.log and stderr.log. The scheme is fixed to file://
// and every path segment is percent-encoded, so a log_dir cannot become
// another kind of link; the directory stays visible as text for copying.
function logLinks(dir) {
  if (typeof dir !== 'string' || !dir.startsWith('/')) return dir ? String(dir) : DASH;
  const base = 'file://' + dir.split('/').map(encodeURIComponent).join('/');
  return h(
      'span', null, h('a', {href: `${base}/stdout.log`}, 'stdout'), ' · ',
      h('a', {href: `${base}/stderr.log`}, 'stderr'), ' · ',
      h('a', {href: `${base}/command.sh`, title: 'the command as it ran, to rerun it by hand'}, 'command'),
      h('div', {class: 'pg-muted pg-small'}, dir));
}

// "±5%", or "±32 MB" when the policy's absolute floor set the threshold (peak RSS).
function thresholdText(c) {
  if (isNum(c.threshold_floor)) return `±${fmtNum(c.threshold_floor)}${c.unit ? ` ${c.unit}` : ''}`;
  return isNum(c.threshold_pct) ? `±${fmtNum(c.threshold_pct)}%` : DASH;
}

function gateSection(gate, suite) {
  const sec = h('div', {class: 'pg-section'});
  sec.append(
      h('h2', null, 'Gate ', gate.id != null ? `#${gate.id} ` : '',
        badge(gate.outcome === 'pass' ? 'pass' : gate.outcome, str(gate.outcome) || DASH, true)));
  const base = Array.isArray(gate.baseline_runs) ? gate.baseline_runs : [];
  sec.append(
      subline(
          h('span', null, 'baseline ', h('code', null, str(gate.baseline) || DASH)),
          base.length ?
              h('span', null, 'baseline runs ', base.flatMap((b, i) => (i ? [', ', runLink(b)] : [runLink(b)]))) :
              null,
          ),
  );
  const comps = (gate.comparisons || []).slice().sort((a, b) => {
    const ia = VERDICT_ORDER.indexOf(a.verdict);
    const ib = VERDICT_ORDER.indexOf(b.verdict);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || collator.compare(str(a.label), str(b.label));
  });
  sec.append(
      table(
          [
            {h: 'verdict', v: (c) => VERDICT_ORDER.indexOf(c.verdict), f: (c) => badge(c.verdict)},
            {h: 'configuration', v: (c) => c.label, cls: 'label'},
            {
              h: 'metric',
              v: (c) => c.metric,
              f: (c) => trendLink(suite, {metric: c.metric, config: c.label}, str(c.metric))
            },
            {h: 'baseline', v: (c) => c.baseline, f: (c) => withUnit(c.baseline, c.unit), cls: 'num'},
            {h: 'candidate', v: (c) => c.candidate, f: (c) => withUnit(c.candidate, c.unit), cls: 'num'},
            {
              h: 'change',
              v: (c) => c.change_pct,
              f: (c) => changeSpan(
                  c.change_pct, null,
                  c.verdict === 'regression'      ? true :
                      c.verdict === 'improvement' ? false :
                                                    undefined),
              cls: 'num'
            },
            {
              h: '95% interval',
              v: (c) => c.ci_low_pct,
              f: (c) =>
                  (isNum(c.ci_low_pct) || isNum(c.ci_high_pct) ? `[${fmtPct(c.ci_low_pct)}, ${fmtPct(c.ci_high_pct)}]` :
                                                                 DASH),
              cls: 'num'
            },
            {h: 'p (adj.)', v: (c) => c.p_adjusted, f: (c) => fmtP(c.p_adjusted), cls: 'num'},
            {h: 'threshold', v: (c) => c.threshold_pct, f: thresholdText, cls: 'num'},
            {h: 'note', v: (c) => c.note, cls: 'text'},
          ],
          comps,
          {empty: 'no comparisons'},
          ),
  );
  return sec;
}
