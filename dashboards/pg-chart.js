/* perfgate dashboard: chart helpers over Dygraph: cards, legends, tickers, overlays drawn on the canvas.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ charts */
const MAX_CHARTS = 12;
let charts = [];

function destroyCharts() {
  for (const g of charts) {
    try {
      g.destroy();
    } catch (e) {
      /* already gone with its element */
    }
  }
  charts = [];
}

const haveDygraph = () => typeof window.Dygraph === 'function';

function chartCard(title, sub) {
  const chart = h('div', {class: 'pg-chart'});
  const legend = h('div', {class: 'pg-legend'});
  const card =
      h('div', {class: 'pg-chart-card'}, h('div', {class: 'pg-chart-title'}, title),
        sub ? h('div', {class: 'pg-chart-sub'}, sub) : null, chart, legend);
  return {card, chart, legend};
}

// Legend content as a DocumentFragment: Dygraph 2.2 appends a fragment
// instead of assigning innerHTML, so data strings stay text.
function legendFragment(parts) {
  const frag = document.createDocumentFragment();
  parts.forEach((p, i) => {
    if (p == null) return;
    if (i > 0 && frag.childNodes.length) frag.appendChild(document.createTextNode('  ·  '));
    if (Array.isArray(p)) {
      frag.appendChild(h('span', {class: 'pg-legend-key'}, p[0], ' '));
      frag.appendChild(h('b', null, p[1]));
    } else if (p instanceof Node)
      frag.appendChild(p);
    else
      frag.appendChild(document.createTextNode(String(p)));
  });
  return frag;
}

// Tick positions for "seconds since start": round h:mm:ss steps.
const TIME_STEPS =
    [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
function hmsTicker(min, max, pixels) {
  const want = Math.max(2, Math.floor(pixels / 85));
  const span = max - min;
  const step = TIME_STEPS.find((s) => span / s <= want) || Math.ceil(span / want / 86400) * 86400;
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max + 1e-9; v += step) out.push({v, label: esc(fmtHms(v))});
  return out;
}

function paddedRange(values) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!isNum(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo === Infinity) return null;
  const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.05 || 1;
  return [lo - pad, hi + pad];
}

function vline(ctx, area, x, colour, dash, label, labelY = 12) {
  if (!isNum(x) || x < area.x - 1 || x > area.x + area.w + 1) return;
  ctx.save();
  ctx.strokeStyle = colour;
  ctx.lineWidth = 1.5;
  ctx.setLineDash(dash || []);
  ctx.beginPath();
  ctx.moveTo(x, area.y);
  ctx.lineTo(x, area.y + area.h);
  ctx.stroke();
  if (label) {
    // Canvas text is pixels, not markup.
    ctx.setLineDash([]);
    ctx.fillStyle = colour;
    ctx.font = '11px system-ui, sans-serif';
    const w = ctx.measureText(label).width;
    const tx = x + 4 + w > area.x + area.w ? x - 4 - w : x + 4;
    ctx.fillText(label, tx, area.y + labelY);
  }
  ctx.restore();
}

// The [ci_low, ci_high] band of trend points ([x, median, lo, hi], x in the
// chart's units) as one polygon per unbroken stretch (a missing median or
// interval breaks it).
function ciBand(ctx, dg, pts, colour) {
  ctx.save();
  ctx.fillStyle = colour;
  let seg = [];
  const flush = () => {
    if (seg.length > 1) {
      ctx.beginPath();
      seg.forEach(([x, , hi], i) => (i ? ctx.lineTo(x, hi) : ctx.moveTo(x, hi)));
      for (let i = seg.length - 1; i >= 0; i--) ctx.lineTo(seg[i][0], seg[i][1]);
      ctx.closePath();
      ctx.fill();
    } else if (seg.length === 1) {
      // an isolated point: its interval as a short bar
      const [x, lo, hi] = seg[0];
      ctx.fillRect(x - 3, Math.min(lo, hi), 6, Math.max(1, Math.abs(lo - hi)));
    }
    seg = [];
  };
  for (const p of pts) {
    const med = p[1];
    const lo = isNum(p[2]) ? p[2] : med;
    const hi = isNum(p[3]) ? p[3] : med;
    if (!isNum(med) || !isNum(lo) || !isNum(hi)) {
      flush();
      continue;
    }
    seg.push([dg.toDomXCoord(p[0]), dg.toDomYCoord(lo), dg.toDomYCoord(hi)]);
  }
  flush();
  ctx.restore();
}

function ring(ctx, x, y, colour, r = 6) {
  if (!isNum(x) || !isNum(y)) return;
  ctx.save();
  ctx.strokeStyle = colour;
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.arc(x, y, r, 0, 2 * Math.PI);
  ctx.stroke();
  ctx.restore();
}

// The options every chart shares (its legend in its card, small axis labels,
// escaped y-axis numbers), under the chart's own; `own.axes.y` may add to the y axis.
function chartOptions(c, legendFormatter, own) {
  const y = {axisLabelFormatter: (v) => esc(fmtAxis(v)), valueFormatter: (v) => esc(fmtNum(v))};
  const axes = Object.assign({}, own.axes, {y: Object.assign(y, own.axes && own.axes.y)});
  return Object.assign(
      {
        labelsDiv: c.legend,
        legend: 'always',
        legendFormatter,
        axisLabelFontSize: 11,
        yAxisLabelWidth: 58,
        gridLineColor: '#e7ebef'
      },
      own,
      {axes},
  );
}

// A page's draw(): every pending chart (drawOne returns whether it drew), or,
// without Dygraph, one error placed by showError.
function drawPending(pending, showError, drawOne) {
  if (!pending.length) return 0;
  if (!haveDygraph()) {
    showError(message('error', 'assets/dygraph.min.js is missing; charts cannot be drawn.'));
    return 0;
  }
  let n = 0;
  for (const p of pending)
    if (drawOne(...p)) n++;
  return n;
}
