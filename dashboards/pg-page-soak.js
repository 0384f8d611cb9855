/* perfgate dashboard: page #/soak/<run> and its charts.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ soak */
function seriesRank(s) {
  const m = str(s.metric).toLowerCase();
  if (m.includes('step_time') || m === 'step_ms') return 0;
  if (m.includes('throughput') || m.includes('samples_per') || m.includes('tokens_per')) return 1;
  // The host probe tells a busy machine from slower code: drawn before the
  // per-phase timings, which the chart budget may leave out.
  if (s.memory || m === 'host.probe_ms') return 2;
  return 3;
}

async function pageSoak(r, index) {
  const idText = String(r.arg);
  if (!/^\d+$/.test(idText)) throw new DataError(`"${idText}" is not a run id.`);
  const data = await need(`soak-${idText}`);
  const runId = data.run !== null && typeof data.run === 'object' ? data.run.id : data.run ?? idText;
  const irow = runById(index, runId) || {};
  const trials = data.trials || [];
  const trialSel = trials.some((t) => String(t.trial) === r.q.trial) ? r.q.trial : '';
  const view = h('div');
  view.append(
      h('h1', null, `Soak — run #${runId} `, h('span', {class: 'pg-muted'}, '— '), str(data.suite ?? irow.suite)));
  view.append(subline(
      runLink(runId, 'run details'),
      irow.started_at != null ? h('span', null, fmtTime(irow.started_at)) : null,
      isNum(data.window_s) ? h('span', null, `window ${fmtHms(data.window_s)}`) : null,
      h('span', null, `${trials.length} trial${trials.length === 1 ? '' : 's'}`),
      h('span', null, 'series downsampled; drift line = first window + slope × time'),
      ));
  view.append(h(
      'div',
      {class: 'pg-controls'},
      select(
          'trial', 'k-trial',
          [
            ['', '(all trials)'],
            ...trials.map((t) => [String(t.trial), `#${t.trial} ${str(t.label)} (${str(t.status)})`])
          ],
          trialSel, (v) => go(link('soak', idText, {trial: v}))),
      ));

  const chosen = trialSel ? trials.filter((t) => String(t.trial) === trialSel) : trials;
  if (!chosen.length) view.append(message('warn', 'This soak recorded no trials.'));
  let budget = MAX_CHARTS;
  let skipped = 0;
  const pending = [];
  for (const t of chosen) {
    const sec = h('div', {class: 'pg-trial'});
    sec.append(
        h('h2', null, `Trial #${str(t.trial)} `, badge(t.status), ' ',
          h('span', {style: 'font-weight:500'}, str(t.label))));
    sec.append(subline(
        h('span', null, `wall ${fmtDur(t.wall_s)}`), h('span', null, `${isNum(t.steps) ? t.steps : DASH} steps`),
        chosen.length > 1 ? h('a', {href: link('soak', idText, {trial: t.trial})}, 'only this trial') : null));
    if (t.error) sec.append(message('error', str(t.error)));
    const findings = t.findings || [];
    sec.append(h('h3', null, `Findings (${findings.length})`));
    if (findings.length) {
      const ul = h('ul', {class: 'pg-findings'});
      for (const f of findings) {
        ul.append(
            h('li', null, badge(f.kind), ' ', f.metric ? h('span', {class: 'pg-finding-metric'}, str(f.metric)) : null,
              str(f.summary),
              isNum(f.value) ?
                  h('span', {class: 'pg-muted'},
                    `  [${
                        f.unit === 's' && f.value >= 60 ? fmtHms(f.value) :
                                                          `${fmtNum(f.value)}${f.unit ? ` ${f.unit}` : ''}`}]`) :
                                                                                        null));
      }
      sec.append(ul);
    } else {
      sec.append(h('p', {class: 'pg-muted'}, 'no findings: no drift, leak, steps, stalls or hang detected'));
    }
    // What the host probe explains: shown, never counted as the workload's.
    const hostEvents = t.host_events || [];
    if (hostEvents.length) {
      sec.append(h('h3', null, `Host events (${hostEvents.length}): the machine moved, not the workload`));
      const ul = h('ul', {class: 'pg-findings pg-host-events'});
      for (const f of hostEvents) {
        ul.append(
            h('li', null, badge(f.kind), ' ', f.metric ? h('span', {class: 'pg-finding-metric'}, str(f.metric)) : null,
              str(f.summary)));
      }
      sec.append(ul);
    }
    const ordered = (t.series || [])
                        .map((s, i) => [s, i])
                        .sort((a, b) => seriesRank(a[0]) - seriesRank(b[0]) || a[1] - b[1])
                        .map((x) => x[0]);
    const grid = h('div', {class: 'pg-charts'});
    for (const s of ordered) {
      if (budget <= 0) {
        skipped++;
        continue;
      }
      budget--;
      const bits = [
        s.unit ? str(s.unit) : null,
        isNum(s.n) ? `${s.n} samples, ${(s.points || []).length} drawn` : null,
        isNum(s.drift_pct_per_h) ? `drift ${fmtPct(s.drift_pct_per_h, 2)}/h (${pEq(s.trend_p)})` : null,
        isNum(s.first_window) || isNum(s.last_window) ? `${fmtNum(s.first_window)} → ${fmtNum(s.last_window)}` : null,
        (s.steps || []).length ? `${s.steps.length} step${s.steps.length > 1 ? 's' : ''}` : null,
      ].filter(Boolean).join(' · ');
      const c = chartCard(
          h('span', null, str(s.metric), s.memory ? h('span', {class: 'pg-muted'}, ' (memory)') : null), bits);
      grid.append(c.card);
      pending.push([t, s, c]);
    }
    sec.append(grid);
    view.append(sec);
  }
  if (skipped) {
    view.insertBefore(
        message(
            'warn',
            `${skipped} more series not drawn (at most ${MAX_CHARTS} charts at once): choose a single trial above.`),
        view.children[3] || null);
  }
  const draw = () => drawPending(pending, (m) => view.prepend(m), soakChart);
  return {name: 'soak', node: view, draw};
}

function soakChart(trial, s, c) {
  const pts = (s.points || []).filter((p) => Array.isArray(p) && isNum(p[0]));
  if (!pts.length) {
    c.chart.replaceWith(message('warn', 'no samples'));
    return false;
  }
  const unit = s.unit ? ` ${s.unit}` : '';
  const findings = trial.findings || [];
  const stallEv = findings.filter((f) => f.kind === 'stalls' && f.metric === s.metric).flatMap((f) => f.evidence || []);
  const otherEv = findings.filter((f) => f.kind !== 'stalls' && f.kind !== 'hang' && f.metric === s.metric)
                      .flatMap((f) => f.evidence || []);
  const hangs = findings.filter((f) => f.kind === 'hang')
                    .map((f) => {
                      const ev = (f.evidence || [])[0];
                      return ev && isNum(ev.t) ? ev.t : isNum(f.value) ? f.value : null;
                    })
                    .filter(isNum);
  // The drift line is a second series rather than an underlay drawing: a
  // dense, noisy series would hide a line drawn beneath it.
  const drift = isNum(s.first_window) && isNum(s.slope_per_h) ? s : null;
  const driftAt = (t) => drift.first_window + (drift.slope_per_h * t) / 3600;
  const rows =
      pts.map((p) => (drift ? [p[0], isNum(p[1]) ? p[1] : null, driftAt(p[0])] : [p[0], isNum(p[1]) ? p[1] : null]));
  const tMax = Math.max(pts[pts.length - 1][0], ...hangs);

  const legendFormatter = (d) => {
    if (d.x == null || d.i == null || !rows[d.i]) {
      return legendFragment([
        h('span', {class: 'pg-legend-hint'}, 'hover for values'),
        drift ? ['drift', `${fmtPct(s.drift_pct_per_h, 2)}/h`] : null,
        drift ? ['slope', `${fmtNum(s.slope_per_h)}${unit}/h`] : null
      ]);
    }
    const [t, v, dv] = rows[d.i];
    const parts = [['t', fmtHms(t)], [str(s.metric), `${fmtNum(v)}${unit}`]];
    if (drift) parts.push(['drift line', `${fmtNum(dv)}${unit}`]);
    return legendFragment(parts);
  };

  const g = new Dygraph(
      c.chart, rows, chartOptions(c, legendFormatter, {
        labels: drift ? ['t', 'value', 'drift'] : ['t', 'value'],
        colors: drift ? ['#1f6feb', '#b7791f'] : ['#1f6feb'],
        strokeWidth: 1,
        series: {drift: {strokeWidth: 2, strokePattern: [7, 4], highlightCircleSize: 0}},
        dateWindow: [0, tMax > 0 ? tMax : 1],
        valueRange: paddedRange(rows.map((x) => x[1]).concat(stallEv.map((e) => e.value))),
        axes: {
          x: {ticker: hmsTicker, axisLabelFormatter: (v) => esc(fmtHms(v)), valueFormatter: (v) => esc(fmtHms(v))},
        },
        underlayCallback: (ctx, area, dg) => {
          for (const st of s.steps || []) {
            vline(ctx, area, dg.toDomXCoord(st.t), '#9a6700', [3, 3], `step ${fmtPct(st.change_pct)}`);
          }
          for (const t of hangs) vline(ctx, area, dg.toDomXCoord(t), '#c62828', null, 'hang');
          for (const ev of stallEv) ring(ctx, dg.toDomXCoord(ev.t), dg.toDomYCoord(ev.value), '#c62828', 5);
          for (const ev of otherEv) {
            if (isNum(ev.t) && isNum(ev.value)) ring(ctx, dg.toDomXCoord(ev.t), dg.toDomYCoord(ev.value), '#9a6700', 4);
          }
        },
      }));
  charts.push(g);
  return true;
}
