/* perfgate dashboard: page #/sweep/<run> and its heatmap.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ sweep */
async function pageSweep(r, index) {
  const data = await need(runKey(r.arg));
  const run = data.run || {};
  const id = run.id ?? r.arg;
  const configs = data.configs || [];
  const view = h('div');
  view.append(h('h1', null, `Sweep — run #${id} `, h('span', {class: 'pg-muted'}, '— '), str(run.suite)));
  view.append(subline(runLink(id, 'run details'), fmtTime(run.started_at), `${configs.length} configurations`));
  if (configs.length < 2) {
    view.append(message(
        'warn', 'This run has a single configuration; there is nothing to rank. ', runLink(id, 'See the run.')));
    return {name: 'sweep', node: view};
  }

  const sweep = data.sweep || null;
  const metrics = [];
  const metricInfo = Object.create(null);
  for (const c of configs) {
    for (const m of c.metrics || []) {
      if (!(m.metric in metricInfo)) {
        metrics.push(m.metric);
        metricInfo[m.metric] = m;
      }
    }
  }
  metrics.sort((a, b) => metricOrder(data.primary)(metricInfo[a], metricInfo[b]));
  const metric = metrics.includes(r.q.metric) ? r.q.metric : (sweep && sweep.metric) || data.primary || metrics[0];
  const info = metricInfo[metric] || {};
  const better = sweep && sweep.metric === metric && sweep.better ? sweep.better : info.better;
  const params = Array.isArray(data.params) ? data.params.map(String) : [];
  const filter = r.q.filter || '';
  const match = matcher(filter);

  // Axes worth offering first: parameters that actually vary.
  const distinctValues = (key) => [...new Set(configs.map((c) => paramText(paramValue(c.params, key))))];
  const varying = params.filter((p) => distinctValues(p).length > 1);
  const x = params.includes(r.q.x) ? r.q.x : varying[0] || params[0] || '';
  const y = params.includes(r.q.y) || r.q.y === '-' ? r.q.y : varying.find((p) => p !== x) || '-';
  const state = {metric, x, y, filter};
  const hashWith = (k, v) => link('sweep', id, {...state, [k]: v});

  const controls = h(
      'div',
      {class: 'pg-controls'},
      select(
          'metric', 's-metric', metrics.map((m) => [m, `${m}${metricInfo[m].unit ? ` (${metricInfo[m].unit})` : ''}`]),
          metric, (v) => go(hashWith('metric', v))),
      select('heatmap x', 's-x', params.map((p) => [p, p]), x, (v) => go(hashWith('x', v))),
      select('heatmap y', 's-y', [['-', '(none)'], ...params.map((p) => [p, p])], y, (v) => go(hashWith('y', v))),
      filterInput('filter configurations', 's-filter', filter, 'e.g. bucket_mb=25', (v) => hashWith('filter', v)),
  );
  view.append(controls);

  // Ranking: perfgate's own (analysis/sweep, as `perfgate sweep`) for every
  // metric with a direction; a metric without one is only ordered by value.
  const sweeps = data.sweeps || {};
  const fromSweep = Boolean(sweeps[metric] && Array.isArray(sweeps[metric].ranked));
  const sw = fromSweep ? sweeps[metric] : null;
  let ranked;
  if (fromSweep) {
    ranked = sw.ranked.map((x0) => ({...x0}));
  } else {
    ranked = [];
    for (const c of configs) {
      const m = (c.metrics || []).find((mm) => mm.metric === metric);
      if (m && isNum(m.median))
        ranked.push({
          config: c.id,
          label: c.label,
          median: m.median,
          ci_low: m.ci_low,
          ci_high: m.ci_high,
          n: m.n,
          min_max: isNum(m.ci_coverage) && m.ci_coverage < 0.95
        });
    }
    const sign = better === 'higher' ? -1 : 1;
    ranked.sort((a, b) => sign * (a.median - b.median));
  }
  const shown = ranked.filter((x0) => match(x0.label));
  controls.append(h('span', {class: 'pg-count'}, `${shown.length} of ${ranked.length} ranked`));

  // "best" sentence: a clear winner, or who is tied with the best.
  const line = h('div', {class: 'pg-best-line'});
  if (fromSweep && ranked.length) {
    line.append('best: ', h('b', null, str(ranked[0].label)), ', ');
    if (sw.clear_winner)
      line.append(
          h('span', {class: 'pg-change-good'},
            `better than every other configuration beyond the ${fmtNum(sw.threshold_pct)} % threshold`));
    else
      line.append(
          h('span', {class: 'pg-muted'},
            `no clear winner: tied with ${plural((sw.tied_with_best || []).length, 'configuration')}`));
    line.append(
        h('br'),
        h('span', {class: 'pg-muted'},
          'best against each other: two-sided Mann-Whitney, Holm over the comparisons with the best, and a lead beyond the threshold'));
  } else if (ranked.length) {
    line.append('best by median: ', h('b', null, str(ranked[0].label)));
    line.append(h('span', {class: 'pg-muted'}, ` (${metric} has no better direction; ordered by value)`));
  } else {
    line.append(h('span', {class: 'pg-muted'}, `no configuration has a ${metric} median`));
  }
  view.append(line);

  // Ranked table with an interval bar on one shared scale.
  const lo = Math.min(...shown.map((x0) => (isNum(x0.ci_low) ? x0.ci_low : x0.median)).filter(isNum));
  const hi = Math.max(...shown.map((x0) => (isNum(x0.ci_high) ? x0.ci_high : x0.median)).filter(isNum));
  const span = hi - lo || Math.abs(hi) || 1;
  const pos = (v) => `${(((v - lo) / span) * 100).toFixed(2)}%`;
  const best = ranked[0];
  const rankOf = new Map(ranked.map((x0, i) => [x0, i + 1]));
  view.append(
      h('h2', null, `Ranked by ${metric}`, info.unit ? ` (${info.unit})` : '',
        better && better !== 'none' ? h('span', {class: 'pg-muted'}, ` — ${better} is better`) : null));
  view.append(
      table(
          [
            {h: '#', v: (x0) => rankOf.get(x0), cls: 'num', f: (x0) => String(rankOf.get(x0))},
            {h: 'configuration', v: (x0) => x0.label, cls: 'label'},
            {h: 'median', v: (x0) => x0.median, cls: 'num'},
            {
              h: '95% interval',
              v: (x0) => x0.ci_low,
              f: (x0) => `${fmtInterval(x0.ci_low, x0.ci_high)}${x0.min_max && x0.n > 1 ? '*' : ''}`,
              cls: 'num'
            },
            {h: 'n', v: (x0) => x0.n, f: (x0) => (isNum(x0.n) ? String(x0.n) : DASH), cls: 'num'},
            {
              h: 'against the best',
              v: (x0) =>
                  (x0 === best ? 0 :
                       x0.tied ? 1 :
                                 2),
              f: (x0) => {
                if (!fromSweep) return '';
                if (x0 === best) return 'best';
                if (x0.beaten) return `better than this (p adj ${fmtP(x0.p_adjusted)})`;
                const need = isNum(x0.repeats_to_separate) && x0.repeats_to_separate > 0 ?
                    `; ~${x0.repeats_to_separate} repeats each would separate` :
                    '';
                // Too few trials for the test to reach its level at all: say so rather than "not significant".
                return x0.underpowered ? `too few trials to tell apart${need}` : `tied with the best${need}`;
              },
            },
            {
              h: 'vs best',
              v: (x0) =>
                  (best && isNum(best.median) && best.median !== 0 ? ((x0.median - best.median) / best.median) * 100 :
                                                                     null),
              f: (x0) =>
                  (best && x0 !== best && isNum(best.median) && best.median !== 0 ?
                       changeSpan(((x0.median - best.median) / best.median) * 100, better) :
                       ''),
              cls: 'num'
            },
            {
              h: 'interval',
              f: (x0) => {
                const bar =
                    h('div',
                      {class: 'pg-ibar', title: `${fmtNum(x0.ci_low)} … ${fmtNum(x0.median)} … ${fmtNum(x0.ci_high)}`});
                if (!isNum(x0.median)) return bar;
                const a = isNum(x0.ci_low) ? x0.ci_low : x0.median;
                const b = isNum(x0.ci_high) ? x0.ci_high : x0.median;
                const range = h('div', {class: 'pg-ibar-range'});
                range.style.left = pos(a);
                range.style.width = `${Math.max(0.6, ((b - a) / span) * 100).toFixed(2)}%`;
                const med = h('div', {class: 'pg-ibar-med'});
                med.style.left = pos(x0.median);
                bar.append(range, med);
                return bar;
              },
            },
            {h: '', f: (x0) => trendLink(run.suite, {metric, config: x0.label}, 'trend ↗'), cls: 'nowrap'},
          ],
          shown,
          {empty: 'no configuration matches',
           rowClass: (x0) =>
               (x0 === best ? 'pg-best' :
                    x0.tied ? 'pg-tied' :
                              '')},
          ),
  );
  if (shown.some((x0) => x0.min_max && x0.n > 1))
    view.append(h('p', {class: 'pg-muted'}, '* fewer than 6 trials: the interval is [min, max], not 95 %'));

  view.append(heatmap(configs.filter((c) => match(c.label)), metric, better, x, y, info.unit));
  return {name: 'sweep', node: view};
}

function heatmap(configs, metric, better, xKey, yKey, unit) {
  const sec = h('div', {class: 'pg-section'});
  sec.append(
      h('h2', null, `Heatmap of ${metric}`,
        h('span', {class: 'pg-muted'}, ` — ${xKey || '?'} × ${yKey === '-' ? '(none)' : yKey}`)));
  if (!xKey) {
    sec.append(message('warn', 'This run records no parameters to lay out.'));
    return sec;
  }
  const cells = new Map();  // "x\u0000y" -> {sum, n, labels}
  const xs = new Set();
  const ys = new Set();
  for (const c of configs) {
    const m = (c.metrics || []).find((mm) => mm.metric === metric);
    const xv = paramText(paramValue(c.params, xKey));
    const yv = yKey === '-' ? '' : paramText(paramValue(c.params, yKey));
    xs.add(xv);
    ys.add(yv);
    if (!m || !isNum(m.median)) continue;
    const k = `${xv}\u0000${yv}`;
    const cell = cells.get(k) || {sum: 0, n: 0, labels: []};
    cell.sum += m.median;
    cell.n += 1;
    cell.labels.push(str(c.label));
    cells.set(k, cell);
  }
  const xList = [...xs].sort(collator.compare);
  const yList = [...ys].sort(collator.compare);
  const means = [...cells.values()].map((c) => c.sum / c.n);
  const lo = Math.min(...means);
  const hi = Math.max(...means);
  const colour = (v) => {
    const t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    if (better === 'lower' || better === 'higher') {
      const bad = better === 'lower' ? t : 1 - t;  // 0 = best
      return `hsl(${Math.round(130 * (1 - bad))}, 62%, ${Math.round(80 - 8 * Math.sin(bad * Math.PI))}%)`;
    }
    return `hsl(212, 65%, ${Math.round(93 - 30 * t)}%)`;
  };
  const tbl = h('table', {class: 'pg-heatmap'});
  const head = h('tr', null, h('th', {class: 'pg-axis'}, yKey === '-' ? '' : `${yKey} ↓  ${xKey} →`));
  for (const xv of xList) head.appendChild(h('th', null, xv));
  const frag = document.createDocumentFragment();
  frag.appendChild(head);
  for (const yv of yList) {
    const tr = h('tr', null, h('th', null, yKey === '-' ? metric : yv));
    for (const xv of xList) {
      const cell = cells.get(`${xv}\u0000${yv}`);
      if (!cell) {
        tr.appendChild(h('td', {class: 'pg-cell-empty'}));
        continue;
      }
      const v = cell.sum / cell.n;
      const td =
          h('td', {
            title: `${cell.labels.join('\n')}\n${fmtNum(v)}${unit ? ` ${unit}` : ''}${
                cell.n > 1 ? ` (mean of ${cell.n})` : ''}`
          },
            fmtNum(v));
      if (cell.n > 1) td.appendChild(h('small', null, `mean of ${cell.n}`));
      td.style.backgroundColor = colour(v);
      tr.appendChild(td);
    }
    frag.appendChild(tr);
  }
  tbl.appendChild(frag);
  sec.append(h('div', {style: 'overflow-x:auto'}, tbl));
  if (means.length) {
    const sw = h('span', {class: 'pg-heat-swatch'});
    sw.style.background = `linear-gradient(to right, ${colour(better === 'higher' ? hi : lo)}, ${
        colour((lo + hi) / 2)}, ${colour(better === 'higher' ? lo : hi)})`;
    const first = better === 'higher' ? hi : lo;
    const last = better === 'higher' ? lo : hi;
    sec.append(
        h('div', {class: 'pg-heat-legend'}, fmtNum(first), sw, fmtNum(last), unit ? ` ${unit}` : '',
          better === 'lower' || better === 'higher' ? ` — green is better (${better})` : ' — no better direction',
          '; empty cells: no configuration with a median there'));
  }
  return sec;
}
