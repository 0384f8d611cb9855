/* perfgate dashboard: page #/trend/<suite> and its charts.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ trend */
async function pageTrend(r, index) {
  const suiteName = r.arg;
  const suite = suiteByName(index, suiteName);
  const view = h('div');
  view.append(h('h1', null, 'Trend — ', str(suiteName)));
  if (!suite) {
    view.append(message('warn', `No suite named "${suiteName}" in this dashboard.`));
    return {name: 'trend', node: view};
  }
  if (!suite.trend) {
    view.append(message('warn', 'This suite has no trend data.'));
    return {name: 'trend', node: view};
  }
  const data = await need(String(suite.trend));
  const series = data.series || [];
  // The suite's recorded primary metric first and by default (facts never reach this page).
  const metrics = [];
  for (const m of [data.primary, ...(suite.metrics || []), ...series.map((s) => s.metric)]) {
    if (m && !metrics.includes(m) && series.some((s) => s.metric === m)) metrics.push(m);
  }
  const metric = r.q.metric === '*' || metrics.includes(r.q.metric) ? r.q.metric : metrics[0] || '';
  const bySel = series.filter((s) => metric === '*' || s.metric === metric);
  const labels = [...new Set(bySel.map((s) => str(s.label)))].sort(collator.compare);
  const config = labels.includes(r.q.config) ? r.q.config : '';
  const filter = r.q.filter || '';
  // Overlay: the chosen configurations of one metric on one chart and one scale.
  const overlay = r.q.overlay === '1' && metric !== '*';
  const state = {metric, config, filter, overlay: overlay ? '1' : ''};
  const hashWith = (k, v) => link('trend', suiteName, {...state, [k]: v});
  const match = matcher(filter);
  const chosen = bySel.filter((s) => (!config || s.label === config) && match(s.label));

  const controls = h(
      'div',
      {class: 'pg-controls'},
      select(
          'metric', 't-metric', [...metrics.map((m) => [m, m]), ['*', '(all metrics)']], metric,
          (v) => go(hashWith('metric', v))),
      select(
          'configuration', 't-config', [['', `(all ${labels.length} configurations)`], ...labels.map((l) => [l, l])],
          config, (v) => go(hashWith('config', v))),
      filterInput('filter labels', 't-filter', filter, 'e.g. graph_mode=eager', (v) => hashWith('filter', v)),
      h('label', {
        class: 'pg-check',
        title: metric === '*' ? 'pick one metric to overlay its configurations' :
                                'every configuration of this metric on one chart with one scale'
      },
        h('input', {
          type: 'checkbox',
          id: 't-overlay',
          checked: overlay,
          disabled: metric === '*',
          onchange: (e) => go(hashWith('overlay', e.target.checked ? '1' : ''))
        }),
        ' overlay on one scale'),
      h('span', {class: 'pg-count'}, `${chosen.length} series · ${isNum(suite.runs) ? plural(suite.runs, 'run') : ''}`),
  );
  view.append(controls);
  if (r.q.config && !config)
    view.append(message(
        'warn', `No configuration "${r.q.config}" for ${metric === '*' ? 'any metric' : metric}; showing all.`));

  view.append(subline(
      h('span', null, 'one point per run, in run order (the axis names the run; hover for its time and commit)'),
      h('span', null, 'median per run with its 95% interval'),
      h('span', null, 'dashed lines: change points (red when a regression)'),
      h('span', null, 'red rings: runs a gate judged a regression'),
      h('span', null, 'green band: latest gate baseline ± threshold'),
      h('span', null, 'drag to zoom, double-click to reset, click a point to open its run')));

  const shown = chosen.slice(0, overlay ? MAX_OVERLAY : MAX_CHARTS);
  const grid = h('div', {class: overlay ? 'pg-charts pg-charts-wide' : 'pg-charts'});
  const pending = [];
  if (overlay && shown.length) {
    const c = chartCard(
        `${metric}: ${plural(shown.length, 'configuration')}`,
        `${shown[0].unit ? `${shown[0].unit}, ` : ''}${
            shown[0].better && shown[0].better !== 'none' ? `${shown[0].better} is better, ` : ''}one scale`);
    // The key: which colour is which configuration (the legend names them only on hover).
    c.card.append(
        h('div', {class: 'pg-overlay-key'},
          shown.map(
              (s, i) =>
                  h('span', {class: 'pg-overlay-item'},
                    h('span', {class: 'pg-swatch', style: `background:${OVERLAY_COLOURS[i % OVERLAY_COLOURS.length]}`}),
                    str(s.label)))));
    grid.append(c.card);
    pending.push([shown, c]);
  }
  for (const s of overlay ? [] : shown) {
    const last = (s.points || []).filter((p) => isNum(p[1])).slice(-1)[0];
    const sub =
        [
          `${s.metric}${s.unit ? ` (${s.unit})` : ''}${
              s.better && s.better !== 'none' ? `, ${s.better} is better` : ''}`,
          plural((s.points || []).length, 'run'),
          last ? `latest ${fmtNum(last[1])}` : null,
          (s.changes || []).length ? `${s.changes.length} change point${s.changes.length > 1 ? 's' : ''}` : null,
          (s.regressions || []).length ?
              `${s.regressions.length} gate regression${s.regressions.length > 1 ? 's' : ''}` :
              null,
          (s.culprits || []).length ? `${s.culprits.length} bisected culprit${s.culprits.length > 1 ? 's' : ''}` : null,
        ].filter(Boolean)
            .join(' · ');
    const c = chartCard(str(s.label), sub);
    // Culprits that perfgate bisect named for this series, newest first.
    const culprits = (s.culprits || []).slice(0, 6);
    if (culprits.length) {
      c.card.append(
          h('div', {class: 'pg-changes'}, 'bisected culprits: ',
            culprits.flatMap(
                (cu, i) =>
                    [i ? ', ' : '',
                     h('code', null, shortCommit(cu.sha)),
                     ` "${str(cu.subject)}" `,
                     h('span', {class: 'pg-change-bad'}, isNum(cu.change_pct) ? fmtPct(cu.change_pct) : ''),
                     ` (bisect ${str(cu.bisect)}${cu.run != null ? ', regressed in ' : ''}`,
                     cu.run != null ? runLink(cu.run) : '',
                     ')',
      ])));
    }
    // Change points as text with links, under the chart.
    const chs = (s.changes || []).slice(-6);
    if (chs.length) {
      c.card.append(
          h('div', {class: 'pg-changes'}, 'change points: ',
            chs.flatMap(
                (ch, i) =>
                    [i ? ', ' : '',
                     runLink(ch.run),
                     ` ${fmtTime(ch.t).slice(0, 10)} `,
                     h('span', {class: ch.regression ? 'pg-change-bad' : null},
                       `${fmtNum(ch.before)} → ${fmtNum(ch.after)} (${fmtPct(ch.change_pct)}, ${pEq(ch.p)})`),
      ]),
            s.changes.length > chs.length ? ` … ${s.changes.length - chs.length} earlier` : ''));
    }
    grid.append(c.card);
    pending.push([s, c]);
  }
  if (!chosen.length) view.append(message('warn', 'No series match this metric, configuration and filter.'));
  if (chosen.length > shown.length) {
    view.append(message(
        'warn',
        `Showing ${shown.length} of ${
            chosen.length} matching series. Pick a configuration or narrow the filter to see the others.`));
  }
  view.append(grid);
  if (chosen.length > shown.length) {
    const more = h('div', {class: 'pg-more'}, h('b', null, 'Not drawn:'));
    const ul = h('ul');
    for (const s of chosen.slice(shown.length, shown.length + 200)) {
      ul.append(
          h('li', null,
            h('a', {href: link('trend', suiteName, {metric: s.metric, config: s.label})}, `${s.label} — ${s.metric}`)));
    }
    more.append(ul);
    if (chosen.length > shown.length + 200)
      more.append(h('div', {class: 'pg-muted'}, `… and ${chosen.length - shown.length - 200} more`));
    view.append(more);
  }

  const draw = () => drawPending(pending, (m) => grid.before(m), overlay ? overlayChart : trendChart);
  return {name: 'trend', node: view, draw};
}

const MAX_OVERLAY = 10;
const OVERLAY_COLOURS =
    ['#1f6feb', '#c2410c', '#1b7f3b', '#8250df', '#b7791f', '#0e7490', '#be185d', '#4b5563', '#65a30d', '#9a3412'];

// Ticks of an ordinal run axis: run ids ("#12") at whole positions, thinned to fit.
const runTicker = (runs) => (min, max, pixels) => {
  const lo = Math.max(0, Math.ceil(min));
  const hi = Math.min(runs.length - 1, Math.floor(max));
  const step = Math.max(1, Math.ceil((hi - lo + 1) / Math.max(1, Math.floor(pixels / 56))));
  const out = [];
  for (let i = lo; i <= hi; i += step) out.push({v: i, label: esc(`#${runs[i]}`)});
  return out;
};

// Configurations of one metric over the union of their runs, in time order:
// one position per run on a shared scale, so configurations line up by run.
function overlayChart(list, c) {
  const runs = new Map();
  for (const s of list)
    for (const p of s.points || [])
      if (Array.isArray(p) && isNum(p[0])) runs.set(String(p[4]), [p[0], p[5]]);
  const order = [...runs.entries()].sort((a, b) => a[1][0] - b[1][0]);
  if (!order.length) {
    c.chart.replaceWith(message('warn', 'no points'));
    return false;
  }
  const pos = new Map(order.map(([id], i) => [id, i]));
  const rows = order.map((_, i) => [i, ...list.map(() => null)]);
  list.forEach((s, k) => {
    for (const p of s.points || []) {
      const i = pos.get(String(p[4]));
      if (i != null && isNum(p[1])) rows[i][k + 1] = p[1];
    }
  });
  const ids = order.map(([id]) => id);
  const unit = list[0].unit ? ` ${list[0].unit}` : '';
  const legendFormatter = (d) => {
    if (d.x == null || d.i == null || !order[d.i]) {
      return legendFragment(
          [h('span', {class: 'pg-legend-hint'}, 'hover a run for every configuration\'s median; click to open it')]);
    }
    const [id, [t, commit]] = order[d.i];
    const vals = (d.series || []).filter((x) => isNum(x.y)).map((x) => [x.label, `${fmtNum(x.y)}${unit}`]);
    return legendFragment([fmtTime(t), ['run', `#${id}`], ['commit', shortCommit(commit)], ...vals]);
  };
  const g =
      new Dygraph(c.chart, rows, chartOptions(c, legendFormatter, {
                    labels: ['run', ...list.map((s) => str(s.label))],
                    colors: list.map((_, i) => OVERLAY_COLOURS[i % OVERLAY_COLOURS.length]),
                    connectSeparatedPoints: true,
                    strokeWidth: 1.5,
                    drawPoints: rows.length <= 150,
                    pointSize: rows.length <= 5 ? 4 : 2,
                    highlightCircleSize: 4,
                    dateWindow: rows.length < 2 ? [-1, 1] : null,
                    xRangePad: 10,
                    valueRange: paddedRange(rows.flatMap((r) => r.slice(1))),
                    axes: {
                      x: {ticker: runTicker(ids), valueFormatter: (i) => (order[i] ? esc(`run #${order[i][0]}`) : '')},
                    },
                    clickCallback: () => {
                      const row = g.getSelection();
                      if (row >= 0 && order[row]) go(link('run', order[row][0]));
                    },
                  }));
  charts.push(g);
  return true;
}

function trendChart(s, c) {
  const pts = (s.points || []).filter((p) => Array.isArray(p) && isNum(p[0]));
  if (!pts.length) {
    c.chart.replaceWith(message('warn', 'no points'));
    return false;
  }
  // points: [t_s, median, ci_low, ci_high, run_id, commit]
  // The interval band is drawn by ciBand() in the underlay instead of
  // Dygraph's customBars: Dygraph fills one quad per point, which costs
  // ~75 ms of raster per 1000-point chart; one polygon costs ~5 ms.
  // One position per run in run order: four runs of one day are four points, not one vertical line.
  const rows = pts.map((p, i) => [i, isNum(p[1]) ? p[1] : null]);
  const band = pts.map((p, i) => [i, p[1], p[2], p[3]]);
  const rowOfRun = new Map(pts.map((p, i) => [String(p[4]), i]));
  const regRuns = new Set((s.regressions || []).map(String));
  const base = s.baseline && isNum(s.baseline.lo) && isNum(s.baseline.hi) ? s.baseline : null;
  const range = paddedRange(pts.flatMap((p) => [p[1], p[2], p[3]]).concat(base ? [base.lo, base.hi] : []));
  const unit = s.unit ? ` ${s.unit}` : '';

  const legendFormatter = (d) => {
    if (d.x == null || d.i == null || !pts[d.i]) {
      const last = pts[pts.length - 1];
      return legendFragment([
        h('span', {class: 'pg-legend-hint'}, 'hover for commit and run; latest '), ['run', `#${str(last[4])}`],
        ['commit', shortCommit(last[5])], ['median', `${fmtNum(last[1])}${unit}`]
      ]);
    }
    const p = pts[d.i];
    const parts = [
      fmtTime(p[0]), ['run', `#${str(p[4])}`], ['commit', shortCommit(p[5])], ['median', `${fmtNum(p[1])}${unit}`],
      ['95%', fmtInterval(p[2], p[3])]
    ];
    if (regRuns.has(String(p[4]))) parts.push(h('span', {class: 'pg-change-bad'}, 'gate: regression'));
    for (const cu of s.culprits || []) {
      if (cu.run != null && String(cu.run) === String(p[4]))
        parts.push(h('span', {class: 'pg-change-bad'}, `bisect: culprit ${shortCommit(cu.sha)}`));
    }
    const ch = (s.changes || []).find((x) => String(x.run) === String(p[4]));
    if (ch)
      parts.push(
          h('span', {class: ch.regression ? 'pg-change-bad' : 'pg-muted'},
            `change point ${fmtPct(ch.change_pct)} (${pEq(ch.p)})`));
    return legendFragment(parts);
  };

  // A single run would sit on a zero-width axis.
  const dateWindow = pts.length < 2 ? [-1, 1] : null;
  const g = new Dygraph(
      c.chart, rows, chartOptions(c, legendFormatter, {
        labels: ['run', 'median'],
        dateWindow,
        colors: ['#1f6feb'],
        strokeWidth: 1.5,
        drawPoints: pts.length <= 150,
        xRangePad: 10,
        pointSize: pts.length <= 5 ? 4 : 2,
        highlightCircleSize: 4,
        valueRange: range,
        axes: {
          x: {ticker: runTicker(pts.map((p) => p[4])), valueFormatter: (i) => (pts[i] ? esc(fmtTime(pts[i][0])) : '')},
        },
        clickCallback: (e, x, points) => {
          const row = g.getSelection();
          const p = pts[row >= 0 ? row : -1];
          if (p && p[4] != null) go(link('run', p[4]));
        },
        underlayCallback: (ctx, area, dg) => {
          if (base) {
            const y1 = dg.toDomYCoord(base.hi);
            const y2 = dg.toDomYCoord(base.lo);
            ctx.save();
            ctx.fillStyle = 'rgba(27,127,59,0.10)';
            ctx.fillRect(area.x, Math.min(y1, y2), area.w, Math.abs(y2 - y1));
            ctx.strokeStyle = 'rgba(27,127,59,0.35)';
            ctx.setLineDash([2, 3]);
            ctx.beginPath();
            ctx.moveTo(area.x, y1);
            ctx.lineTo(area.x + area.w, y1);
            ctx.moveTo(area.x, y2);
            ctx.lineTo(area.x + area.w, y2);
            ctx.stroke();
            ctx.restore();
          }
          ciBand(ctx, dg, band, 'rgba(31,111,235,0.18)');
          for (const ch of s.changes || []) {
            // The change's run, else the first run at or after its time.
            let i = rowOfRun.get(String(ch.run));
            if (i == null && isNum(ch.t)) i = pts.findIndex((p) => p[0] >= ch.t);
            if (i == null || i < 0) continue;
            vline(ctx, area, dg.toDomXCoord(i), ch.regression ? '#c62828' : '#0b5cad', [5, 4], fmtPct(ch.change_pct));
          }
          for (const cu of s.culprits || []) {
            // At the nightly that regressed: the culprit came in since the one before.
            const i = cu.run != null ? rowOfRun.get(String(cu.run)) : null;
            if (i == null) continue;
            vline(ctx, area, dg.toDomXCoord(i) - 3, '#8a3ffc', [2, 2], `culprit ${shortCommit(cu.sha)}`, 26);
          }
          for (const run of regRuns) {
            const i = rowOfRun.get(run);
            if (i == null || !isNum(pts[i][1])) continue;
            ring(ctx, dg.toDomXCoord(i), dg.toDomYCoord(pts[i][1]), '#c62828', 7);
          }
        },
      }));
  charts.push(g);
  return true;
}
