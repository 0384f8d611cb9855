/* perfgate dashboard front-end (docs/dashboard.md is the contract).
 *
 * Plain ES2020, no build step, no framework; Dygraph is the only library.
 * The page is opened from file://, so data arrives as <script src="data/<key>.js">
 * files that call PG.receive(key, object) -- fetch()/XHR are refused there.
 *
 * Security rule for this file: every string that comes from data (suite and
 * workload names, labels, parameter values, errors, notes, paths, env...)
 * enters the DOM through textContent / createTextNode / setAttribute on
 * non-executable attributes. Nothing here assigns innerHTML. The two places
 * where Dygraph itself uses innerHTML (axis tick labels, legend) are fed either
 * esc()-ed text or a DocumentFragment built with text nodes.
 */
'use strict';

/* ------------------------------------------------------------------ errors */
// Installed first so that anything failing later is visible to people (the
// red box) and to tests (#pg-errors in --dump-dom output, console).
const pendingErrors = [];
function reportError(msg) {
  console.error('[perfgate]', msg);
  const box = document.getElementById('pg-errors');
  if (box) box.appendChild(document.createTextNode(String(msg) + '\n'));
  else pendingErrors.push(String(msg));
}
window.onerror = (message, source, line, col, err) => {
  // Browsers hide the details of errors in other file:// scripts (data
  // files) behind "Script error."; the console still has them.
  if (!source && /^Script error\.?$/.test(String(message))) {
    reportError('Script error in a data file or asset (a syntax error?); the browser console has the details.');
    return;
  }
  const where = source ? ` (${source}:${line}:${col})` : '';
  reportError(`${(err && err.stack) || message}${where}`);
};
window.addEventListener('unhandledrejection', (e) => {
  const r = e.reason;
  reportError(`unhandled rejection: ${(r && (r.stack || r.message)) || r}`);
});

/* ------------------------------------------------------------------ data */
// A missing or broken data file is an expected condition (a partial copy of
// the directory, --runs N cutting old runs), shown as a message in the page
// rather than as a JavaScript error.
class DataError extends Error {}

const PG = (window.PG = {
  data: Object.create(null),
  receive(key, obj) {
    PG.data[String(key)] = obj;
  },
});

const loads = new Map();
// Keys end up in a <script src>, and run ids come from the URL: only plain
// names are allowed so a crafted link cannot load a script from elsewhere.
const KEY_RE = /^[A-Za-z0-9_-]+$/;

function need(key) {
  if (key in PG.data) return Promise.resolve(PG.data[key]);
  if (!KEY_RE.test(key)) {
    return Promise.reject(new DataError(`"${key}" is not a valid data file name.`));
  }
  let p = loads.get(key);
  if (p) return p;
  p = new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = `data/${key}.js`;
    // The script runs (and calls PG.receive) before its load event.
    s.onload = () => {
      if (key in PG.data) resolve(PG.data[key]);
      else reject(new DataError(`data/${key}.js loaded but did not call PG.receive("${key}", …) (a syntax error in it, or the wrong key).`));
    };
    s.onerror = () => reject(new DataError(`data/${key}.js could not be loaded: the file is missing or unreadable.`));
    document.head.appendChild(s);
  });
  loads.set(key, p);
  p.catch(() => loads.delete(key)); // allow a retry on the next navigation
  return p;
}

/* ------------------------------------------------------------------ DOM helpers */
// h('a', {href: '#/run/3', class: 'x'}, 'text', node, [more]) -- strings become
// text nodes, never markup.
function h(tag, props, ...kids) {
  const e = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = String(v);
      else if (k === 'style') e.style.cssText = v; // only literal styles from this file
      else if (k.startsWith('on')) {
        // Handlers only as functions: an "on…" attribute from a string would be code.
        if (typeof v === 'function') e.addEventListener(k.slice(2), v);
      }
      else if (k === 'href') e.setAttribute('href', safeHref(v));
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(e, kids);
  return e;
}

function append(parent, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k == null || k === false) continue;
    parent.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return parent;
}

// Only in-page anchors are ever linked: no javascript:, no file paths.
function safeHref(v) {
  const s = String(v);
  // In-page anchors, and file:// links that logLinks() builds from encoded segments.
  if (s.startsWith('#')) return s;
  if (/^file:\/\/\/[A-Za-z0-9%._~!$&'()*+,;=:@\/-]*$/.test(s)) return s;
  return '#';
}

// For the few places where Dygraph assigns innerHTML (tick labels).
function esc(s) {
  return String(s)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const $ = (sel) => document.querySelector(sel);

/* ------------------------------------------------------------------ formatting */
const DASH = '–';
const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

function fmtNum(v) {
  if (!isNum(v)) return DASH;
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (Number.isInteger(v) && a < 1e7) return String(v);
  if (a >= 1e7 || a < 1e-3) return v.toExponential(2);
  if (a >= 1000) return v.toFixed(0);
  if (a >= 100) return v.toFixed(1);
  if (a >= 10) return v.toFixed(2);
  if (a >= 1) return v.toFixed(3);
  return v.toPrecision(3);
}

// Tick labels: no trailing zeros; abbreviated only from 10 million on, with
// enough digits that neighbouring ticks stay distinct.
function fmtAxis(v) {
  if (!isNum(v)) return '';
  const a = Math.abs(v);
  if (a >= 1e10) return `${+(v / 1e9).toPrecision(5)}G`;
  if (a >= 1e7) return `${+(v / 1e6).toPrecision(5)}M`;
  return String(+v.toPrecision(7));
}

function fmtPct(v, digits = 1) {
  if (!isNum(v)) return DASH;
  return `${v > 0 ? '+' : ''}${v.toFixed(digits)}%`;
}

// cv is a fraction (0.012 -> "1.2%"), as perfgate's tables print it.
function fmtCv(v) {
  return isNum(v) ? `${(v * 100).toFixed(1)}%` : DASH;
}

function fmtP(p) {
  if (!isNum(p)) return DASH;
  if (p < 0.001) return '<0.001';
  return String(+p.toPrecision(2));
}

// "p=0.04" / "p<0.001"
function pEq(p) {
  const t = fmtP(p);
  return t.startsWith('<') ? `p${t}` : `p=${t}`;
}

// Unix seconds -> "2026-10-27 09:33 UTC" (UTC like the CLI tables, so a
// screenshot means the same thing everywhere).
function fmtTime(s) {
  if (typeof s === 'string' && s) return s;
  if (!isNum(s) || s <= 0) return DASH;
  const d = new Date(s * 1000);
  if (Number.isNaN(d.getTime())) return DASH;
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

// Seconds since start -> "h:mm:ss".
function fmtHms(t) {
  if (!isNum(t)) return DASH;
  const neg = t < 0;
  let s = Math.round(Math.abs(t));
  const hh = Math.floor(s / 3600);
  s -= hh * 3600;
  const mm = Math.floor(s / 60);
  s -= mm * 60;
  return `${neg ? '-' : ''}${hh}:${String(mm).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
}

function fmtDur(s) {
  if (!isNum(s)) return DASH;
  return s < 60 ? `${s.toFixed(1)} s` : fmtHms(s);
}

function fmtInterval(lo, hi) {
  if (!isNum(lo) && !isNum(hi)) return DASH;
  return `[${fmtNum(lo)}, ${fmtNum(hi)}]`;
}

function shortCommit(c) {
  return c ? String(c).slice(0, 10) : DASH;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function str(v) {
  return v == null ? '' : String(v);
}

function tagsOf(r) {
  if (Array.isArray(r.tags)) return r.tags.map(String);
  if (typeof r.tags === 'string' && r.tags) return r.tags.split(',').map((s) => s.trim()).filter(Boolean);
  return [];
}

/* ------------------------------------------------------------------ colours / badges */
const TONE = {
  ok: 'green', completed: 'green', pass: 'green', improvement: 'green',
  failed: 'red', timed_out: 'red', regression: 'red', hang: 'red', nan_loss: 'red',
  interrupted: 'amber', inconclusive: 'amber', missing: 'amber', staircase: 'amber', stalls: 'amber',
  memory_growth: 'amber', drift: 'amber', jitter: 'grey',
  unchanged: 'grey', running: 'blue', soak: 'blue', import: 'grey', run: 'grey',
};
const VERDICT_ORDER = ['regression', 'failed', 'missing', 'inconclusive', 'improvement', 'unchanged'];

function badge(kind, text, solid) {
  const k = str(kind);
  const tone = Object.prototype.hasOwnProperty.call(TONE, k) ? TONE[k] : 'grey';
  return h('span', { class: `pg-badge ${tone}${solid ? ' solid' : ''}` }, text == null ? k || DASH : text);
}

const SHORT_VERDICT = { regression: 'regr', failed: 'fail', missing: 'miss', inconclusive: 'inconcl', improvement: 'impr', unchanged: 'same' };

// Verdict counts as coloured badges; compact ones (for wide tables) use short
// words with the full word as a tooltip.
function countBadges(counts, compact) {
  if (!counts) return DASH;
  const out = [];
  for (const k of VERDICT_ORDER) {
    const n = counts[k];
    if (isNum(n) && n > 0) {
      const b = badge(k, `${n} ${compact ? SHORT_VERDICT[k] : k}`);
      if (compact) b.title = `${n} ${k}`;
      out.push(b);
    }
  }
  return out.length ? out : h('span', { class: 'pg-muted' }, 'no comparisons');
}

function gateCell(gate, compact) {
  if (!gate) return h('span', { class: 'pg-muted' }, 'not gated');
  return h('span', { title: gate.baseline ? `gate #${str(gate.id)} against ${gate.baseline}` : null },
    badge(gate.outcome, str(gate.outcome) || DASH, true), ' ', countBadges(gate.counts, compact));
}

// Colour a relative change by whether it is good for this metric.
function changeSpan(pct, better, regression) {
  const t = fmtPct(pct);
  if (!isNum(pct)) return t;
  let bad = regression;
  if (bad == null) {
    if (better === 'lower') bad = pct > 0;
    else if (better === 'higher') bad = pct < 0;
    else return t;
  }
  return h('span', { class: bad ? 'pg-change-bad' : 'pg-change-good' }, t);
}

/* ------------------------------------------------------------------ routing */
// #/<page>/<arg>?k=v&k=v ; every component percent-encoded (encodeURIComponent).
// '+' is a literal plus, not a space: the generator must write spaces as %20.
function dec(s) {
  try {
    return decodeURIComponent(s);
  } catch (e) {
    return s; // a malformed escape: show the raw text rather than failing
  }
}

function parseHash() {
  const raw = location.hash.replace(/^#/, '');
  const qi = raw.indexOf('?');
  const path = qi < 0 ? raw : raw.slice(0, qi);
  const query = qi < 0 ? '' : raw.slice(qi + 1);
  const seg = path.replace(/^\/+/, '').split('/');
  const q = Object.create(null);
  for (const kv of query.split('&')) {
    if (!kv) continue;
    const i = kv.indexOf('=');
    q[dec(i < 0 ? kv : kv.slice(0, i))] = i < 0 ? '' : dec(kv.slice(i + 1));
  }
  // The argument is everything after the page, so an unencoded "/" in a suite
  // name still works.
  return { page: dec(seg[0] || '') || 'overview', arg: seg.length > 1 ? dec(seg.slice(1).join('/')) : '', q };
}

function link(page, arg, q) {
  let s = `#/${page}`;
  if (arg != null && arg !== '') s += `/${encodeURIComponent(String(arg))}`;
  const parts = [];
  for (const [k, v] of Object.entries(q || {})) {
    if (v == null || v === '') continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? `${s}?${parts.join('&')}` : s;
}

const runLink = (id, text) => h('a', { href: link('run', id) }, text == null ? `#${id}` : text);
const trendLink = (suite, q, text) => h('a', { href: link('trend', suite, q) }, text);

/* ------------------------------------------------------------------ tables */
// cols: [{h: header, v: row => sort value, f: row => display (string|Node|array), cls, title}]
// Tables are filled through a DocumentFragment (one DOM insertion), and
// sortable by clicking a header unless opts.sort === false.
const TABLE_PAGE = 200;

function table(cols, rows, opts = {}) {
  const tbody = h('tbody');
  const ths = cols.map((c) => h('th', { class: [c.cls, opts.sort === false || !c.v ? '' : 'pg-sortable'].join(' ').trim() || null, title: c.title }, c.h));
  // Long tables show their first rows and a button for the rest: laying out
  // a thousand rows costs more than the rest of the page together.
  let limit = opts.limit || TABLE_PAGE;
  let current = rows;
  const fill = (rs) => {
    current = rs;
    const frag = document.createDocumentFragment();
    if (!rs.length) {
      frag.appendChild(h('tr', null, h('td', { class: 'pg-empty', colspan: cols.length }, opts.empty || 'none')));
    }
    for (const r of rs.length > limit ? rs.slice(0, limit) : rs) {
      const tr = document.createElement('tr');
      const rc = opts.rowClass && opts.rowClass(r);
      if (rc) tr.className = rc;
      for (const c of cols) {
        const td = document.createElement('td');
        if (c.cls) td.className = c.cls;
        let v = c.f ? c.f(r) : c.v(r);
        // null/NaN show as a dash; an empty string stays empty on purpose.
        if (v == null || (typeof v === 'number' && !Number.isFinite(v))) v = DASH;
        else if (typeof v === 'number') v = fmtNum(v);
        append(td, [v]);
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    }
    if (rs.length > limit) {
      const more = h('button', { type: 'button', class: 'pg-button' }, `show all ${rs.length} rows`);
      more.addEventListener('click', () => {
        limit = Infinity;
        fill(current);
      });
      frag.appendChild(h('tr', { class: 'pg-more-row' }, h('td', { colspan: cols.length }, `${limit} of ${rs.length} rows shown · `, more)));
    }
    tbody.replaceChildren(frag);
  };
  fill(rows);
  if (opts.sort !== false) {
    cols.forEach((c, i) => {
      if (!c.v) return;
      ths[i].addEventListener('click', () => {
        const dir = ths[i].dataset.dir === 'asc' ? 'desc' : 'asc';
        ths.forEach((t) => delete t.dataset.dir);
        ths[i].dataset.dir = dir;
        const sign = dir === 'asc' ? 1 : -1;
        const sorted = rows.slice().sort((a, b) => sign * compareValues(c.v(a), c.v(b)));
        fill(sorted);
      });
    });
  }
  return h('div', { class: 'pg-table-wrap' }, h('table', { class: `pg-table ${opts.cls || ''}` }, h('thead', null, h('tr', null, ths)), tbody));
}

// Numbers numerically, nulls last, strings naturally ("bucket_mb=5" < "bucket_mb=25").
const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
function compareValues(a, b) {
  const na = a == null || (typeof a === 'number' && !Number.isFinite(a));
  const nb = b == null || (typeof b === 'number' && !Number.isFinite(b));
  if (na || nb) return na === nb ? 0 : na ? 1 : -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return collator.compare(String(a), String(b));
}

function kvTable(obj) {
  const rows = Object.entries(obj || {});
  return table(
    [
      { h: 'key', f: (r) => r[0] },
      { h: 'value', f: (r) => (r[1] !== null && typeof r[1] === 'object' ? JSON.stringify(r[1], null, 1) : r[1] == null ? DASH : String(r[1])) },
    ],
    rows,
    { cls: 'pg-kv', sort: false, empty: 'nothing recorded' },
  );
}

// A muted line of items separated by " · " (CSS adds the separators
// between elements, so bare strings are wrapped in spans).
function subline(...items) {
  const d = h('div', { class: 'pg-sub' });
  for (const it of items.flat()) {
    if (it == null || it === false || it === '') continue;
    d.appendChild(it instanceof Node ? it : h('span', null, String(it)));
  }
  return d;
}

function message(kind, ...text) {
  return h('div', { class: `pg-message pg-message-${kind}` }, ...text);
}

function select(labelText, id, options, value, onchange) {
  // options: [[value, text]]
  const s = h('select', { id, onchange: (e) => onchange(e.target.value) });
  for (const [v, t] of options) {
    const o = h('option', { value: v }, t);
    if (v === value) o.selected = true;
    s.appendChild(o);
  }
  return h('label', { for: id }, labelText, s);
}

// A text filter that updates the URL without piling up history entries and
// re-renders after a short pause in typing.
let filterTimer = 0;
function filterInput(labelText, id, value, placeholder, makeHash) {
  const input = h('input', { type: 'search', id, value, placeholder, autocomplete: 'off', spellcheck: 'false' });
  input.addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      history.replaceState(null, '', makeHash(input.value));
      route();
    }, 250);
  });
  return h('label', { for: id }, labelText, input);
}

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

// Terms separated by spaces must all occur in the label (case-insensitive),
// so "bucket_mb=25 num_workers=4" narrows on two parameters.
function matcher(text) {
  const terms = str(text).toLowerCase().split(/\s+/).filter(Boolean);
  return (label) => {
    const l = str(label).toLowerCase();
    return terms.every((t) => l.includes(t));
  };
}

function paramValue(params, key) {
  if (!params || typeof params !== 'object') return undefined;
  if (Object.prototype.hasOwnProperty.call(params, key)) return params[key];
  // Parameters are listed flattened ("dataloader.num_workers"); a config may
  // carry them nested.
  let cur = params;
  for (const part of key.split('.')) {
    if (cur && typeof cur === 'object' && Object.prototype.hasOwnProperty.call(cur, part)) cur = cur[part];
    else return undefined;
  }
  return cur;
}

function paramText(v) {
  if (v === undefined) return '(unset)';
  if (v !== null && typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

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
  const chart = h('div', { class: 'pg-chart' });
  const legend = h('div', { class: 'pg-legend' });
  const card = h('div', { class: 'pg-chart-card' }, h('div', { class: 'pg-chart-title' }, title), sub ? h('div', { class: 'pg-chart-sub' }, sub) : null, chart, legend);
  return { card, chart, legend };
}

// Legend content as a DocumentFragment: Dygraph 2.2 appends a fragment
// instead of assigning innerHTML, so data strings stay text.
function legendFragment(parts) {
  const frag = document.createDocumentFragment();
  parts.forEach((p, i) => {
    if (p == null) return;
    if (i > 0 && frag.childNodes.length) frag.appendChild(document.createTextNode('  ·  '));
    if (Array.isArray(p)) {
      frag.appendChild(h('span', { class: 'pg-legend-key' }, p[0], ' '));
      frag.appendChild(h('b', null, p[1]));
    } else if (p instanceof Node) frag.appendChild(p);
    else frag.appendChild(document.createTextNode(String(p)));
  });
  return frag;
}

// Tick positions for "seconds since start": round h:mm:ss steps.
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
function hmsTicker(min, max, pixels) {
  const want = Math.max(2, Math.floor(pixels / 85));
  const span = max - min;
  const step = TIME_STEPS.find((s) => span / s <= want) || Math.ceil(span / want / 86400) * 86400;
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max + 1e-9; v += step) out.push({ v, label: esc(fmtHms(v)) });
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

/* ------------------------------------------------------------------ chrome */
function renderChrome(index, r) {
  const nav = $('#pg-nav');
  const items = [];
  const add = (href, text, active, title) => items.push(h('a', { href, class: active ? 'active' : null, title }, text));
  add(link('overview'), 'Overview', r.page === 'overview');
  add(link('runs'), 'Runs', r.page === 'runs');
  items.push(h('span', { class: 'pg-sep' }));
  items.push(h('span', { class: 'pg-nav-label' }, 'Trends:'));
  // Suites of soaks only have no trend: their runs are judged on the soak page.
  const suites = (index.suites || []).filter((s) => s.trend);
  if (suites.length <= 8) {
    for (const s of suites) add(link('trend', s.name), str(s.name), r.page === 'trend' && r.arg === s.name, str(s.name));
  } else {
    // Many suites: a select keeps the header one line high.
    const cur = r.page === 'trend' ? r.arg : '';
    const sel = h('select', { id: 'pg-nav-trend', 'aria-label': 'trend of suite', onchange: (e) => e.target.value && go(link('trend', e.target.value)) },
      h('option', { value: '' }, '(choose a suite)'));
    for (const s of suites) {
      const o = h('option', { value: str(s.name) }, str(s.name));
      if (s.name === cur) o.selected = true;
      sel.appendChild(o);
    }
    items.push(sel);
  }
  nav.replaceChildren(...items);
  const meta = $('#pg-meta');
  meta.replaceChildren(
    h('span', null, `generated ${fmtTime(index.generated_at)}`),
    h('span', { title: 'database' }, `db ${str(index.db) || DASH}`),
    index.perfgate_version ? h('span', null, `perfgate ${index.perfgate_version}`) : null,
  );
}

function runById(index, id) {
  return (index.runs || []).find((r) => String(r.id) === String(id));
}

function suiteByName(index, name) {
  return (index.suites || []).find((s) => s.name === name);
}

/* ------------------------------------------------------------------ overview */
async function pageOverview(r, index) {
  const view = h('div');
  view.append(h('h1', null, 'Overview'));

  const suites = index.suites || [];
  view.append(h('h2', null, 'Latest run per suite'));
  view.append(
    table(
      [
        { h: 'suite', v: (s) => s.name, f: (s) => trendLink(s.name, null, str(s.name)), cls: 'label' },
        { h: 'runs', v: (s) => s.runs, cls: 'num' },
        { h: 'latest', v: (s) => s.latest_run, f: (s) => (s.latest_run != null ? runLink(s.latest_run) : DASH), cls: 'nowrap' },
        { h: 'status', v: (s) => (runById(index, s.latest_run) || {}).status, f: (s) => { const run = runById(index, s.latest_run); return run ? badge(run.status) : DASH; } },
        { h: 'started', v: (s) => (runById(index, s.latest_run) || {}).started_at, f: (s) => fmtTime((runById(index, s.latest_run) || {}).started_at), cls: 'nowrap' },
        { h: 'commit', v: (s) => (runById(index, s.latest_run) || {}).commit, f: (s) => { const run = runById(index, s.latest_run) || {}; return h('code', { title: str(run.commit) }, shortCommit(run.commit)); } },
        { h: 'trials ok / failed', v: (s) => (runById(index, s.latest_run) || {}).trials_failed, f: (s) => { const run = runById(index, s.latest_run); return run ? trialCounts(run) : DASH; }, cls: 'nowrap' },
        { h: 'gate', f: (s) => { const run = runById(index, s.latest_run); return run ? gateCell(run.gate) : DASH; } },
        { h: '', f: (s) => { const run = runById(index, s.latest_run); return run ? runExtraLinks(run) : null; }, cls: 'nowrap' },
      ],
      suites,
      { empty: 'no suites in the database' },
    ),
  );

  const regs = (index.regressions || []).slice().sort((a, b) => compareValues(b.at, a.at));
  const shownRegs = regs.slice(0, 25);
  view.append(h('h2', null, 'Recent regressions', regs.length > shownRegs.length ? h('span', { class: 'pg-muted' }, ` (latest ${shownRegs.length} of ${regs.length})`) : null));
  view.append(
    table(
      [
        { h: 'when', v: (x) => x.at, f: (x) => fmtTime(x.at), cls: 'nowrap' },
        { h: 'run', v: (x) => x.run, f: (x) => runLink(x.run) },
        { h: 'suite', v: (x) => x.suite, cls: 'label' },
        { h: 'configuration', v: (x) => x.label, cls: 'label' },
        { h: 'metric', v: (x) => x.metric, f: (x) => trendLink(x.suite, { metric: x.metric, config: x.label }, str(x.metric)) },
        { h: 'baseline', v: (x) => x.baseline, f: (x) => withUnit(x.baseline, x.unit), cls: 'num' },
        { h: 'candidate', v: (x) => x.candidate, f: (x) => withUnit(x.candidate, x.unit), cls: 'num' },
        { h: 'change', v: (x) => x.change_pct, f: (x) => changeSpan(x.change_pct, null, true), cls: 'num' },
        { h: '', f: (x) => trendLink(x.suite, { metric: x.metric, config: x.label }, 'trend ↗'), cls: 'nowrap' },
      ],
      shownRegs,
      { empty: 'no regressions judged by a gate' },
    ),
  );

  const finds = index.soak_findings || [];
  view.append(h('h2', null, 'Soak findings'));
  view.append(
    table(
      [
        { h: 'run', v: (x) => x.run, f: (x) => h('a', { href: link('soak', x.run) }, `#${x.run}`) },
        { h: 'suite', v: (x) => x.suite, cls: 'label' },
        { h: 'configuration', v: (x) => x.label, cls: 'label' },
        { h: 'kind', v: (x) => x.kind, f: (x) => badge(x.kind) },
        { h: 'metric', v: (x) => x.metric, f: (x) => (x.metric ? h('code', null, x.metric) : DASH) },
        { h: 'summary', v: (x) => x.summary, cls: 'text' },
      ],
      finds,
      { empty: 'no soak findings' },
    ),
  );

  const failing = index.failing_trials || [];
  view.append(h('h2', null, 'Failing trials of the latest runs'));
  view.append(
    table(
      [
        { h: 'run', v: (x) => x.run, f: (x) => runLink(x.run) },
        { h: 'suite', v: (x) => x.suite, cls: 'label' },
        { h: 'configuration', v: (x) => x.label, cls: 'label' },
        { h: 'repeat', v: (x) => x.repeat, f: (x) => (isNum(x.repeat) ? String(x.repeat) : DASH), cls: 'num' },
        { h: 'status', v: (x) => x.status, f: (x) => badge(x.status) },
        { h: 'error', v: (x) => x.error, cls: 'text' },
      ],
      failing,
      { empty: 'every trial of the latest runs succeeded' },
    ),
  );
  return { name: 'overview', node: view };
}

function withUnit(v, unit) {
  return isNum(v) ? `${fmtNum(v)}${unit ? ` ${unit}` : ''}` : DASH;
}

function trialCounts(run) {
  const failed = run.trials_failed || 0;
  return h('span', null, h('span', { class: 'pg-change-good' }, String(run.trials_ok ?? DASH)), ' / ',
    h('span', { class: failed > 0 ? 'pg-change-bad' : 'pg-muted' }, String(run.trials_failed ?? DASH)));
}

function runExtraLinks(run) {
  const out = [];
  if (isNum(run.configs) && run.configs > 1) out.push(h('a', { href: link('sweep', run.id) }, 'sweep'));
  if (run.kind === 'soak') out.push(h('a', { href: link('soak', run.id) }, 'soak'));
  return out.flatMap((a, i) => (i ? [' · ', a] : [a]));
}

/* ------------------------------------------------------------------ runs */
async function pageRuns(r, index) {
  const runs = index.runs || [];
  const q = { suite: r.q.suite || '', tag: r.q.tag || '', status: r.q.status || '', kind: r.q.kind || '' };
  const setQ = (k, v) => go(link('runs', null, { ...q, [k]: v }));
  const distinct = (f) => [...new Set(runs.flatMap(f))].sort(collator.compare);

  const controls = h('div', { class: 'pg-controls' },
    select('suite', 'f-suite', [['', '(all suites)'], ...(index.suites || []).map((s) => [s.name, s.name])], q.suite, (v) => setQ('suite', v)),
    select('tag', 'f-tag', [['', '(any tag)'], ...distinct((x) => tagsOf(x)).map((t) => [t, t])], q.tag, (v) => setQ('tag', v)),
    select('status', 'f-status', [['', '(any status)'], ...distinct((x) => [str(x.status)]).map((t) => [t, t])], q.status, (v) => setQ('status', v)),
    select('kind', 'f-kind', [['', '(any kind)'], ...distinct((x) => [str(x.kind)]).filter(Boolean).map((t) => [t, t])], q.kind, (v) => setQ('kind', v)),
  );
  const rows = runs.filter((x) =>
    (!q.suite || x.suite === q.suite) && (!q.tag || tagsOf(x).includes(q.tag)) &&
    (!q.status || x.status === q.status) && (!q.kind || x.kind === q.kind));
  controls.append(h('span', { class: 'pg-count' }, `${rows.length} of ${runs.length} runs`));

  const view = h('div', null, h('h1', null, 'Runs'), controls);
  view.append(
    table(
      [
        { h: 'run', v: (x) => x.id, f: (x) => [runLink(x.id), h('div', { class: 'pg-small' }, runExtraLinks(x))], cls: 'nowrap' },
        { h: 'suite', v: (x) => x.suite, f: (x) => trendLink(x.suite, null, str(x.suite)), cls: 'label-s' },
        { h: 'started', v: (x) => x.started_at, f: (x) => fmtTime(x.started_at), cls: 'nowrap' },
        { h: 'duration', v: (x) => (isNum(x.ended_at) && isNum(x.started_at) && x.ended_at > 0 ? x.ended_at - x.started_at : null), f: (x) => (isNum(x.ended_at) && x.ended_at > 0 ? fmtDur(x.ended_at - x.started_at) : DASH), cls: 'num' },
        { h: 'status', v: (x) => x.status, f: (x) => [badge(x.status), x.kind && x.kind !== 'run' ? badge(x.kind) : null], cls: 'nowrap' },
        { h: 'configs', v: (x) => x.configs, cls: 'num' },
        { h: 'trials ok/fail', v: (x) => x.trials_failed, f: trialCounts, cls: 'num' },
        { h: 'commit · branch', v: (x) => x.commit, f: (x) => [h('code', { title: str(x.commit) }, shortCommit(x.commit)), x.branch ? h('div', { class: 'pg-muted pg-small' }, str(x.branch)) : null], cls: 'label-s' },
        { h: 'tags', v: (x) => tagsOf(x).join(' '), f: (x) => tagsOf(x).map((t) => badge('tag', t)), cls: 'tags' },
        { h: 'gate', v: (x) => (x.gate ? x.gate.outcome : null), f: (x) => gateCell(x.gate, true), cls: 'gate' },
      ],
      rows,
      { empty: 'no runs match' },
    ),
  );
  return { name: 'runs', node: view };
}

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
  view.append(h('h1', null, `Run #${id} `, h('span', { class: 'pg-muted' }, '— '), str(run.suite ?? irow.suite)));
  const configs = data.configs || [];
  const kind = run.kind ?? irow.kind;
  view.append(
    subline(
      badge(run.status ?? irow.status),
      h('span', null, fmtTime(run.started_at)),
      h('span', null, 'commit ', h('code', { title: str(run.commit) }, shortCommit(run.commit ?? irow.commit))),
      trendLink(run.suite ?? irow.suite, null, 'trends'),
      configs.length > 1 ? h('a', { href: link('sweep', id) }, 'sweep ranking & heatmap') : null,
      kind === 'soak' ? h('a', { href: link('soak', id) }, 'soak series') : null,
    ),
  );

  // The record's scalar fields; objects (fingerprint, env, plan) get their own tables.
  const scalars = {};
  const objects = {};
  for (const [k, v] of Object.entries(run)) {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) objects[k] = v;
    else if (k === 'started_at' || k === 'ended_at') scalars[k] = fmtTime(v);
    else scalars[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  if (isNum(run.started_at) && isNum(run.ended_at) && run.ended_at > 0) scalars.duration = fmtDur(run.ended_at - run.started_at);

  const suite = run.suite ?? irow.suite;
  // Configurations x metrics: one row per configuration, one column per
  // metric (primary first, harness-measured last); each cell holds the
  // median, its 95% interval and the CV.
  view.append(h('h2', null, 'Configurations and metrics'));
  const mInfo = new Map();
  for (const c of configs) for (const m of c.metrics || []) if (!mInfo.has(m.metric)) mInfo.set(m.metric, m);
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
        { h: 'seq', v: (t) => t.seq, f: (t) => (isNum(t.seq) ? String(t.seq) : DASH), cls: 'num' },
        { h: 'trial', v: (t) => t.id, f: (t) => (t.id != null ? `#${t.id}` : DASH), cls: 'num' },
        { h: 'configuration', v: (t) => t.label, cls: 'label' },
        { h: 'repeat', v: (t) => t.repeat, f: (t) => (isNum(t.repeat) ? String(t.repeat) : DASH), cls: 'num' },
        { h: 'status', v: (t) => t.status, f: (t) => badge(t.status) },
        { h: 'exit', v: (t) => t.exit_code, f: (t) => (isNum(t.exit_code) ? String(t.exit_code) : DASH), cls: 'num' },
        { h: 'signal', v: (t) => t.signal, f: (t) => (isNum(t.signal) && t.signal !== 0 ? String(t.signal) : DASH), cls: 'num' },
        { h: 'wall', v: (t) => t.wall_s, f: (t) => fmtDur(t.wall_s), cls: 'num' },
        { h: 'error', v: (t) => t.error, cls: 'text' },
        { h: 'notes', v: (t) => t.notes, cls: 'text' },
        { h: 'logs', v: (t) => t.log_dir, f: (t) => logLinks(t.log_dir), cls: 'path' },
      ],
      trials,
      { empty: 'no trials', rowClass: (t) => (t.status && t.status !== 'ok' ? 'pg-failed' : '') },
    ),
  );

  if (data.gate) view.append(gateSection(data.gate, suite));

  view.append(h('h2', null, 'Run record'));
  view.append(kvTable(scalars));
  const objKeys = Object.keys(objects).sort((a, b) => (a === 'fingerprint' ? -1 : b === 'fingerprint' ? 1 : a === 'env' ? -1 : b === 'env' ? 1 : collator.compare(a, b)));
  const grid = h('div', { class: 'pg-grid2' });
  for (const k of objKeys) {
    grid.append(h('div', null, h('h2', null, k === 'env' ? 'Environment (env)' : k === 'fingerprint' ? 'Fingerprint' : k), kvTable(objects[k])));
  }
  view.append(grid);
  return { name: 'run', node: view };
}

// Links to a trial's stdout.log and stderr.log. The scheme is fixed to file://
// and every path segment is percent-encoded, so a log_dir cannot become
// another kind of link; the directory stays visible as text for copying.
function logLinks(dir) {
  if (typeof dir !== 'string' || !dir.startsWith('/')) return dir ? String(dir) : DASH;
  const base = 'file://' + dir.split('/').map(encodeURIComponent).join('/');
  return h('span', null,
    h('a', { href: `${base}/stdout.log` }, 'stdout'), ' · ',
    h('a', { href: `${base}/stderr.log` }, 'stderr'),
    h('div', { class: 'pg-muted pg-small' }, dir));
}

function gateSection(gate, suite) {
  const sec = h('div', { class: 'pg-section' });
  sec.append(h('h2', null, 'Gate ', gate.id != null ? `#${gate.id} ` : '', badge(gate.outcome === 'pass' ? 'pass' : gate.outcome, str(gate.outcome) || DASH, true)));
  const base = Array.isArray(gate.baseline_runs) ? gate.baseline_runs : [];
  sec.append(
    subline(
      h('span', null, 'baseline ', h('code', null, str(gate.baseline) || DASH)),
      base.length ? h('span', null, 'baseline runs ', base.flatMap((b, i) => (i ? [', ', runLink(b)] : [runLink(b)]))) : null,
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
        { h: 'verdict', v: (c) => VERDICT_ORDER.indexOf(c.verdict), f: (c) => badge(c.verdict) },
        { h: 'configuration', v: (c) => c.label, cls: 'label' },
        { h: 'metric', v: (c) => c.metric, f: (c) => trendLink(suite, { metric: c.metric, config: c.label }, str(c.metric)) },
        { h: 'baseline', v: (c) => c.baseline, f: (c) => withUnit(c.baseline, c.unit), cls: 'num' },
        { h: 'candidate', v: (c) => c.candidate, f: (c) => withUnit(c.candidate, c.unit), cls: 'num' },
        { h: 'change', v: (c) => c.change_pct, f: (c) => changeSpan(c.change_pct, null, c.verdict === 'regression' ? true : c.verdict === 'improvement' ? false : undefined), cls: 'num' },
        { h: '95% interval', v: (c) => c.ci_low_pct, f: (c) => (isNum(c.ci_low_pct) || isNum(c.ci_high_pct) ? `[${fmtPct(c.ci_low_pct)}, ${fmtPct(c.ci_high_pct)}]` : DASH), cls: 'num' },
        { h: 'p (adj.)', v: (c) => c.p_adjusted, f: (c) => fmtP(c.p_adjusted), cls: 'num' },
        { h: 'threshold', v: (c) => c.threshold_pct, f: (c) => (isNum(c.threshold_pct) ? `±${c.threshold_pct}%` : DASH), cls: 'num' },
        { h: 'note', v: (c) => c.note, cls: 'text' },
      ],
      comps,
      { empty: 'no comparisons' },
    ),
  );
  return sec;
}

/* ------------------------------------------------------------------ sweep */
async function pageSweep(r, index) {
  const data = await need(runKey(r.arg));
  const run = data.run || {};
  const id = run.id ?? r.arg;
  const configs = data.configs || [];
  const view = h('div');
  view.append(h('h1', null, `Sweep — run #${id} `, h('span', { class: 'pg-muted' }, '— '), str(run.suite)));
  view.append(subline(runLink(id, 'run details'), fmtTime(run.started_at), `${configs.length} configurations`));
  if (configs.length < 2) {
    view.append(message('warn', 'This run has a single configuration; there is nothing to rank. ', runLink(id, 'See the run.')));
    return { name: 'sweep', node: view };
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
  const state = { metric, x, y, filter };
  const hashWith = (k, v) => link('sweep', id, { ...state, [k]: v });

  const controls = h('div', { class: 'pg-controls' },
    select('metric', 's-metric', metrics.map((m) => [m, `${m}${metricInfo[m].unit ? ` (${metricInfo[m].unit})` : ''}`]), metric, (v) => go(hashWith('metric', v))),
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
    ranked = sw.ranked.map((x0) => ({ ...x0 }));
  } else {
    ranked = [];
    for (const c of configs) {
      const m = (c.metrics || []).find((mm) => mm.metric === metric);
      if (m && isNum(m.median)) ranked.push({ config: c.id, label: c.label, median: m.median, ci_low: m.ci_low, ci_high: m.ci_high, n: m.n, min_max: isNum(m.ci_coverage) && m.ci_coverage < 0.95 });
    }
    const sign = better === 'higher' ? -1 : 1;
    ranked.sort((a, b) => sign * (a.median - b.median));
  }
  const shown = ranked.filter((x0) => match(x0.label));
  controls.append(h('span', { class: 'pg-count' }, `${shown.length} of ${ranked.length} ranked`));

  // "best" sentence: a clear winner, or who is tied with the best.
  const line = h('div', { class: 'pg-best-line' });
  if (fromSweep && ranked.length) {
    line.append('best: ', h('b', null, str(ranked[0].label)), ', ');
    if (sw.clear_winner) line.append(h('span', { class: 'pg-change-good' }, `better than every other configuration beyond the ${fmtNum(sw.threshold_pct)} % threshold`));
    else line.append(h('span', { class: 'pg-muted' }, `no clear winner: tied with ${plural((sw.tied_with_best || []).length, 'configuration')}`));
    line.append(h('br'), h('span', { class: 'pg-muted' }, 'best against each other: two-sided Mann-Whitney, Holm over the comparisons with the best, and a lead beyond the threshold'));
  } else if (ranked.length) {
    line.append('best by median: ', h('b', null, str(ranked[0].label)));
    line.append(h('span', { class: 'pg-muted' }, ` (${metric} has no better direction; ordered by value)`));
  } else {
    line.append(h('span', { class: 'pg-muted' }, `no configuration has a ${metric} median`));
  }
  view.append(line);

  // Ranked table with an interval bar on one shared scale.
  const lo = Math.min(...shown.map((x0) => (isNum(x0.ci_low) ? x0.ci_low : x0.median)).filter(isNum));
  const hi = Math.max(...shown.map((x0) => (isNum(x0.ci_high) ? x0.ci_high : x0.median)).filter(isNum));
  const span = hi - lo || Math.abs(hi) || 1;
  const pos = (v) => `${(((v - lo) / span) * 100).toFixed(2)}%`;
  const best = ranked[0];
  const rankOf = new Map(ranked.map((x0, i) => [x0, i + 1]));
  view.append(h('h2', null, `Ranked by ${metric}`, info.unit ? ` (${info.unit})` : '', better && better !== 'none' ? h('span', { class: 'pg-muted' }, ` — ${better} is better`) : null));
  view.append(
    table(
      [
        { h: '#', v: (x0) => rankOf.get(x0), cls: 'num', f: (x0) => String(rankOf.get(x0)) },
        { h: 'configuration', v: (x0) => x0.label, cls: 'label' },
        { h: 'median', v: (x0) => x0.median, cls: 'num' },
        { h: '95% interval', v: (x0) => x0.ci_low, f: (x0) => `${fmtInterval(x0.ci_low, x0.ci_high)}${x0.min_max && x0.n > 1 ? '*' : ''}`, cls: 'num' },
        { h: 'n', v: (x0) => x0.n, f: (x0) => (isNum(x0.n) ? String(x0.n) : DASH), cls: 'num' },
        {
          h: 'against the best',
          v: (x0) => (x0 === best ? 0 : x0.tied ? 1 : 2),
          f: (x0) => {
            if (!fromSweep) return '';
            if (x0 === best) return 'best';
            if (x0.beaten) return `better than this (p adj ${fmtP(x0.p_adjusted)})`;
            const need = isNum(x0.repeats_to_separate) && x0.repeats_to_separate > 0 ? `; ~${x0.repeats_to_separate} repeats each would separate` : '';
            // Too few trials for the test to reach its level at all: say so rather than "not significant".
            return x0.underpowered ? `too few trials to tell apart${need}` : `tied with the best${need}`;
          },
        },
        { h: 'vs best', v: (x0) => (best && isNum(best.median) && best.median !== 0 ? ((x0.median - best.median) / best.median) * 100 : null), f: (x0) => (best && x0 !== best && isNum(best.median) && best.median !== 0 ? changeSpan(((x0.median - best.median) / best.median) * 100, better) : ''), cls: 'num' },
        {
          h: 'interval',
          f: (x0) => {
            const bar = h('div', { class: 'pg-ibar', title: `${fmtNum(x0.ci_low)} … ${fmtNum(x0.median)} … ${fmtNum(x0.ci_high)}` });
            if (!isNum(x0.median)) return bar;
            const a = isNum(x0.ci_low) ? x0.ci_low : x0.median;
            const b = isNum(x0.ci_high) ? x0.ci_high : x0.median;
            const range = h('div', { class: 'pg-ibar-range' });
            range.style.left = pos(a);
            range.style.width = `${Math.max(0.6, ((b - a) / span) * 100).toFixed(2)}%`;
            const med = h('div', { class: 'pg-ibar-med' });
            med.style.left = pos(x0.median);
            bar.append(range, med);
            return bar;
          },
        },
        { h: '', f: (x0) => trendLink(run.suite, { metric, config: x0.label }, 'trend ↗'), cls: 'nowrap' },
      ],
      shown,
      { empty: 'no configuration matches', rowClass: (x0) => (x0 === best ? 'pg-best' : x0.tied ? 'pg-tied' : '') },
    ),
  );
  if (shown.some((x0) => x0.min_max && x0.n > 1)) view.append(h('p', { class: 'pg-muted' }, '* fewer than 6 trials: the interval is [min, max], not 95 %'));

  view.append(heatmap(configs.filter((c) => match(c.label)), metric, better, x, y, info.unit));
  return { name: 'sweep', node: view };
}

function heatmap(configs, metric, better, xKey, yKey, unit) {
  const sec = h('div', { class: 'pg-section' });
  sec.append(h('h2', null, `Heatmap of ${metric}`, h('span', { class: 'pg-muted' }, ` — ${xKey || '?'} × ${yKey === '-' ? '(none)' : yKey}`)));
  if (!xKey) {
    sec.append(message('warn', 'This run records no parameters to lay out.'));
    return sec;
  }
  const cells = new Map(); // "x\u0000y" -> {sum, n, labels}
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
    const cell = cells.get(k) || { sum: 0, n: 0, labels: [] };
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
      const bad = better === 'lower' ? t : 1 - t; // 0 = best
      return `hsl(${Math.round(130 * (1 - bad))}, 62%, ${Math.round(80 - 8 * Math.sin(bad * Math.PI))}%)`;
    }
    return `hsl(212, 65%, ${Math.round(93 - 30 * t)}%)`;
  };
  const tbl = h('table', { class: 'pg-heatmap' });
  const head = h('tr', null, h('th', { class: 'pg-axis' }, yKey === '-' ? '' : `${yKey} ↓  ${xKey} →`));
  for (const xv of xList) head.appendChild(h('th', null, xv));
  const frag = document.createDocumentFragment();
  frag.appendChild(head);
  for (const yv of yList) {
    const tr = h('tr', null, h('th', null, yKey === '-' ? metric : yv));
    for (const xv of xList) {
      const cell = cells.get(`${xv}\u0000${yv}`);
      if (!cell) {
        tr.appendChild(h('td', { class: 'pg-cell-empty' }));
        continue;
      }
      const v = cell.sum / cell.n;
      const td = h('td', { title: `${cell.labels.join('\n')}\n${fmtNum(v)}${unit ? ` ${unit}` : ''}${cell.n > 1 ? ` (mean of ${cell.n})` : ''}` }, fmtNum(v));
      if (cell.n > 1) td.appendChild(h('small', null, `mean of ${cell.n}`));
      td.style.backgroundColor = colour(v);
      tr.appendChild(td);
    }
    frag.appendChild(tr);
  }
  tbl.appendChild(frag);
  sec.append(h('div', { style: 'overflow-x:auto' }, tbl));
  if (means.length) {
    const sw = h('span', { class: 'pg-heat-swatch' });
    sw.style.background = `linear-gradient(to right, ${colour(better === 'higher' ? hi : lo)}, ${colour((lo + hi) / 2)}, ${colour(better === 'higher' ? lo : hi)})`;
    const first = better === 'higher' ? hi : lo;
    const last = better === 'higher' ? lo : hi;
    sec.append(h('div', { class: 'pg-heat-legend' }, fmtNum(first), sw, fmtNum(last), unit ? ` ${unit}` : '',
      better === 'lower' || better === 'higher' ? ` — green is better (${better})` : ' — no better direction',
      '; empty cells: no configuration with a median there'));
  }
  return sec;
}

/* ------------------------------------------------------------------ trend */
async function pageTrend(r, index) {
  const suiteName = r.arg;
  const suite = suiteByName(index, suiteName);
  const view = h('div');
  view.append(h('h1', null, 'Trend — ', str(suiteName)));
  if (!suite) {
    view.append(message('warn', `No suite named "${suiteName}" in this dashboard.`));
    return { name: 'trend', node: view };
  }
  if (!suite.trend) {
    view.append(message('warn', 'This suite has no trend data.'));
    return { name: 'trend', node: view };
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
  const state = { metric, config, filter, overlay: overlay ? '1' : '' };
  const hashWith = (k, v) => link('trend', suiteName, { ...state, [k]: v });
  const match = matcher(filter);
  const chosen = bySel.filter((s) => (!config || s.label === config) && match(s.label));

  const controls = h('div', { class: 'pg-controls' },
    select('metric', 't-metric', [...metrics.map((m) => [m, m]), ['*', '(all metrics)']], metric, (v) => go(hashWith('metric', v))),
    select('configuration', 't-config', [['', `(all ${labels.length} configurations)`], ...labels.map((l) => [l, l])], config, (v) => go(hashWith('config', v))),
    filterInput('filter labels', 't-filter', filter, 'e.g. graph_mode=eager', (v) => hashWith('filter', v)),
    h('label', { class: 'pg-check', title: metric === '*' ? 'pick one metric to overlay its configurations' : 'every configuration of this metric on one chart with one scale' },
      h('input', { type: 'checkbox', id: 't-overlay', checked: overlay, disabled: metric === '*', onchange: (e) => go(hashWith('overlay', e.target.checked ? '1' : '')) }),
      ' overlay on one scale'),
    h('span', { class: 'pg-count' }, `${chosen.length} series · ${isNum(suite.runs) ? plural(suite.runs, 'run') : ''}`),
  );
  view.append(controls);
  if (r.q.config && !config) view.append(message('warn', `No configuration "${r.q.config}" for ${metric === '*' ? 'any metric' : metric}; showing all.`));

  view.append(subline(
    h('span', null, 'one point per run, in run order (the axis names the run; hover for its time and commit)'),
    h('span', null, 'median per run with its 95% interval'),
    h('span', null, 'dashed lines: change points (red when a regression)'),
    h('span', null, 'red rings: runs a gate judged a regression'),
    h('span', null, 'green band: latest gate baseline ± threshold'),
    h('span', null, 'drag to zoom, double-click to reset, click a point to open its run')));

  const shown = chosen.slice(0, overlay ? MAX_OVERLAY : MAX_CHARTS);
  const grid = h('div', { class: overlay ? 'pg-charts pg-charts-wide' : 'pg-charts' });
  const pending = [];
  if (overlay && shown.length) {
    const c = chartCard(`${metric}: ${plural(shown.length, 'configuration')}`, `${shown[0].unit ? `${shown[0].unit}, ` : ''}${shown[0].better && shown[0].better !== 'none' ? `${shown[0].better} is better, ` : ''}one scale`);
    // The key: which colour is which configuration (the legend names them only on hover).
    c.card.append(h('div', { class: 'pg-overlay-key' }, shown.map((s, i) => h('span', { class: 'pg-overlay-item' },
      h('span', { class: 'pg-swatch', style: `background:${OVERLAY_COLOURS[i % OVERLAY_COLOURS.length]}` }), str(s.label)))));
    grid.append(c.card);
    pending.push([shown, c]);
  }
  for (const s of overlay ? [] : shown) {
    const last = (s.points || []).filter((p) => isNum(p[1])).slice(-1)[0];
    const sub = [
      `${s.metric}${s.unit ? ` (${s.unit})` : ''}${s.better && s.better !== 'none' ? `, ${s.better} is better` : ''}`,
      plural((s.points || []).length, 'run'),
      last ? `latest ${fmtNum(last[1])}` : null,
      (s.changes || []).length ? `${s.changes.length} change point${s.changes.length > 1 ? 's' : ''}` : null,
      (s.regressions || []).length ? `${s.regressions.length} gate regression${s.regressions.length > 1 ? 's' : ''}` : null,
      (s.culprits || []).length ? `${s.culprits.length} bisected culprit${s.culprits.length > 1 ? 's' : ''}` : null,
    ].filter(Boolean).join(' · ');
    const c = chartCard(str(s.label), sub);
    // Culprits that perfgate bisect named for this series, newest first.
    const culprits = (s.culprits || []).slice(0, 6);
    if (culprits.length) {
      c.card.append(h('div', { class: 'pg-changes' }, 'bisected culprits: ', culprits.flatMap((cu, i) => [
        i ? ', ' : '',
        h('code', null, shortCommit(cu.sha)),
        ` "${str(cu.subject)}" `,
        h('span', { class: 'pg-change-bad' }, isNum(cu.change_pct) ? fmtPct(cu.change_pct) : ''),
        ` (bisect ${str(cu.bisect)}${cu.run != null ? ', regressed in ' : ''}`,
        cu.run != null ? runLink(cu.run) : '',
        ')',
      ])));
    }
    // Change points as text with links, under the chart.
    const chs = (s.changes || []).slice(-6);
    if (chs.length) {
      c.card.append(h('div', { class: 'pg-changes' }, 'change points: ', chs.flatMap((ch, i) => [
        i ? ', ' : '',
        runLink(ch.run),
        ` ${fmtTime(ch.t).slice(0, 10)} `,
        h('span', { class: ch.regression ? 'pg-change-bad' : null }, `${fmtNum(ch.before)} → ${fmtNum(ch.after)} (${fmtPct(ch.change_pct)}, ${pEq(ch.p)})`),
      ]), s.changes.length > chs.length ? ` … ${s.changes.length - chs.length} earlier` : ''));
    }
    grid.append(c.card);
    pending.push([s, c]);
  }
  if (!chosen.length) view.append(message('warn', 'No series match this metric, configuration and filter.'));
  if (chosen.length > shown.length) {
    view.append(message('warn', `Showing ${shown.length} of ${chosen.length} matching series. Pick a configuration or narrow the filter to see the others.`));
  }
  view.append(grid);
  if (chosen.length > shown.length) {
    const more = h('div', { class: 'pg-more' }, h('b', null, 'Not drawn:'));
    const ul = h('ul');
    for (const s of chosen.slice(shown.length, shown.length + 200)) {
      ul.append(h('li', null, h('a', { href: link('trend', suiteName, { metric: s.metric, config: s.label }) }, `${s.label} — ${s.metric}`)));
    }
    more.append(ul);
    if (chosen.length > shown.length + 200) more.append(h('div', { class: 'pg-muted' }, `… and ${chosen.length - shown.length - 200} more`));
    view.append(more);
  }

  const draw = () => {
    if (!pending.length) return 0;
    if (!haveDygraph()) {
      grid.before(message('error', 'assets/dygraph.min.js is missing; charts cannot be drawn.'));
      return 0;
    }
    let n = 0;
    for (const [s, c] of pending) if (overlay ? overlayChart(s, c) : trendChart(s, c)) n++;
    return n;
  };
  return { name: 'trend', node: view, draw };
}

const MAX_OVERLAY = 10;
const OVERLAY_COLOURS = ['#1f6feb', '#c2410c', '#1b7f3b', '#8250df', '#b7791f', '#0e7490', '#be185d', '#4b5563', '#65a30d', '#9a3412'];

// Ticks of an ordinal run axis: run ids ("#12") at whole positions, thinned to fit.
const runTicker = (runs) => (min, max, pixels) => {
  const lo = Math.max(0, Math.ceil(min));
  const hi = Math.min(runs.length - 1, Math.floor(max));
  const step = Math.max(1, Math.ceil((hi - lo + 1) / Math.max(1, Math.floor(pixels / 56))));
  const out = [];
  for (let i = lo; i <= hi; i += step) out.push({ v: i, label: esc(`#${runs[i]}`) });
  return out;
};

// Configurations of one metric over the union of their runs, in time order:
// one position per run on a shared scale, so configurations line up by run.
function overlayChart(list, c) {
  const runs = new Map();
  for (const s of list) for (const p of s.points || []) if (Array.isArray(p) && isNum(p[0])) runs.set(String(p[4]), [p[0], p[5]]);
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
      return legendFragment([h('span', { class: 'pg-legend-hint' }, 'hover a run for every configuration\'s median; click to open it')]);
    }
    const [id, [t, commit]] = order[d.i];
    const vals = (d.series || []).filter((x) => isNum(x.y)).map((x) => [x.label, `${fmtNum(x.y)}${unit}`]);
    return legendFragment([fmtTime(t), ['run', `#${id}`], ['commit', shortCommit(commit)], ...vals]);
  };
  const g = new Dygraph(c.chart, rows, {
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
    labelsDiv: c.legend,
    legend: 'always',
    legendFormatter,
    axisLabelFontSize: 11,
    yAxisLabelWidth: 58,
    gridLineColor: '#e7ebef',
    axes: {
      y: { axisLabelFormatter: (v) => esc(fmtAxis(v)), valueFormatter: (v) => esc(fmtNum(v)) },
      x: { ticker: runTicker(ids), valueFormatter: (i) => (order[i] ? esc(`run #${order[i][0]}`) : '') },
    },
    clickCallback: () => {
      const row = g.getSelection();
      if (row >= 0 && order[row]) go(link('run', order[row][0]));
    },
  });
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
      return legendFragment([h('span', { class: 'pg-legend-hint' }, 'hover for commit and run; latest '), ['run', `#${str(last[4])}`], ['commit', shortCommit(last[5])], ['median', `${fmtNum(last[1])}${unit}`]]);
    }
    const p = pts[d.i];
    const parts = [fmtTime(p[0]), ['run', `#${str(p[4])}`], ['commit', shortCommit(p[5])], ['median', `${fmtNum(p[1])}${unit}`], ['95%', fmtInterval(p[2], p[3])]];
    if (regRuns.has(String(p[4]))) parts.push(h('span', { class: 'pg-change-bad' }, 'gate: regression'));
    for (const cu of s.culprits || []) {
      if (cu.run != null && String(cu.run) === String(p[4])) parts.push(h('span', { class: 'pg-change-bad' }, `bisect: culprit ${shortCommit(cu.sha)}`));
    }
    const ch = (s.changes || []).find((x) => String(x.run) === String(p[4]));
    if (ch) parts.push(h('span', { class: ch.regression ? 'pg-change-bad' : 'pg-muted' }, `change point ${fmtPct(ch.change_pct)} (${pEq(ch.p)})`));
    return legendFragment(parts);
  };

  // A single run would sit on a zero-width axis.
  const dateWindow = pts.length < 2 ? [-1, 1] : null;
  const g = new Dygraph(c.chart, rows, {
    labels: ['run', 'median'],
    dateWindow,
    colors: ['#1f6feb'],
    strokeWidth: 1.5,
    drawPoints: pts.length <= 150,
    xRangePad: 10,
    pointSize: pts.length <= 5 ? 4 : 2,
    highlightCircleSize: 4,
    valueRange: range,
    labelsDiv: c.legend,
    legend: 'always',
    legendFormatter,
    axisLabelFontSize: 11,
    yAxisLabelWidth: 58,
    gridLineColor: '#e7ebef',
    axes: {
      y: { axisLabelFormatter: (v) => esc(fmtAxis(v)), valueFormatter: (v) => esc(fmtNum(v)) },
      x: { ticker: runTicker(pts.map((p) => p[4])), valueFormatter: (i) => (pts[i] ? esc(fmtTime(pts[i][0])) : '') },
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
        ctx.moveTo(area.x, y1); ctx.lineTo(area.x + area.w, y1);
        ctx.moveTo(area.x, y2); ctx.lineTo(area.x + area.w, y2);
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
  });
  charts.push(g);
  return true;
}

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
  view.append(h('h1', null, `Soak — run #${runId} `, h('span', { class: 'pg-muted' }, '— '), str(data.suite ?? irow.suite)));
  view.append(subline(
    runLink(runId, 'run details'),
    irow.started_at != null ? h('span', null, fmtTime(irow.started_at)) : null,
    isNum(data.window_s) ? h('span', null, `window ${fmtHms(data.window_s)}`) : null,
    h('span', null, `${trials.length} trial${trials.length === 1 ? '' : 's'}`),
    h('span', null, 'series downsampled; drift line = first window + slope × time'),
  ));
  view.append(h('div', { class: 'pg-controls' },
    select('trial', 'k-trial', [['', '(all trials)'], ...trials.map((t) => [String(t.trial), `#${t.trial} ${str(t.label)} (${str(t.status)})`])], trialSel,
      (v) => go(link('soak', idText, { trial: v }))),
  ));

  const chosen = trialSel ? trials.filter((t) => String(t.trial) === trialSel) : trials;
  if (!chosen.length) view.append(message('warn', 'This soak recorded no trials.'));
  let budget = MAX_CHARTS;
  let skipped = 0;
  const pending = [];
  for (const t of chosen) {
    const sec = h('div', { class: 'pg-trial' });
    sec.append(h('h2', null, `Trial #${str(t.trial)} `, badge(t.status), ' ', h('span', { style: 'font-weight:500' }, str(t.label))));
    sec.append(subline(
      h('span', null, `wall ${fmtDur(t.wall_s)}`),
      h('span', null, `${isNum(t.steps) ? t.steps : DASH} steps`),
      chosen.length > 1 ? h('a', { href: link('soak', idText, { trial: t.trial }) }, 'only this trial') : null));
    if (t.error) sec.append(message('error', str(t.error)));
    const findings = t.findings || [];
    sec.append(h('h3', null, `Findings (${findings.length})`));
    if (findings.length) {
      const ul = h('ul', { class: 'pg-findings' });
      for (const f of findings) {
        ul.append(h('li', null, badge(f.kind), ' ', f.metric ? h('span', { class: 'pg-finding-metric' }, str(f.metric)) : null, str(f.summary),
          isNum(f.value) ? h('span', { class: 'pg-muted' }, `  [${f.unit === 's' && f.value >= 60 ? fmtHms(f.value) : `${fmtNum(f.value)}${f.unit ? ` ${f.unit}` : ''}`}]`) : null));
      }
      sec.append(ul);
    } else {
      sec.append(h('p', { class: 'pg-muted' }, 'no findings: no drift, leak, steps, stalls or hang detected'));
    }
    // What the host probe explains: shown, never counted as the workload's.
    const hostEvents = t.host_events || [];
    if (hostEvents.length) {
      sec.append(h('h3', null, `Host events (${hostEvents.length}): the machine moved, not the workload`));
      const ul = h('ul', { class: 'pg-findings pg-host-events' });
      for (const f of hostEvents) {
        ul.append(h('li', null, badge(f.kind), ' ', f.metric ? h('span', { class: 'pg-finding-metric' }, str(f.metric)) : null, str(f.summary)));
      }
      sec.append(ul);
    }
    const ordered = (t.series || []).map((s, i) => [s, i]).sort((a, b) => seriesRank(a[0]) - seriesRank(b[0]) || a[1] - b[1]).map((x) => x[0]);
    const grid = h('div', { class: 'pg-charts' });
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
      const c = chartCard(h('span', null, str(s.metric), s.memory ? h('span', { class: 'pg-muted' }, ' (memory)') : null), bits);
      grid.append(c.card);
      pending.push([t, s, c]);
    }
    sec.append(grid);
    view.append(sec);
  }
  if (skipped) {
    view.insertBefore(message('warn', `${skipped} more series not drawn (at most ${MAX_CHARTS} charts at once): choose a single trial above.`), view.children[3] || null);
  }
  const draw = () => {
    if (!pending.length) return 0;
    if (!haveDygraph()) {
      view.prepend(message('error', 'assets/dygraph.min.js is missing; charts cannot be drawn.'));
      return 0;
    }
    let n = 0;
    for (const [t, s, c] of pending) if (soakChart(t, s, c)) n++;
    return n;
  };
  return { name: 'soak', node: view, draw };
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
  const otherEv = findings.filter((f) => f.kind !== 'stalls' && f.kind !== 'hang' && f.metric === s.metric).flatMap((f) => f.evidence || []);
  const hangs = findings.filter((f) => f.kind === 'hang').map((f) => {
    const ev = (f.evidence || [])[0];
    return ev && isNum(ev.t) ? ev.t : isNum(f.value) ? f.value : null;
  }).filter(isNum);
  // The drift line is a second series rather than an underlay drawing: a
  // dense, noisy series would hide a line drawn beneath it.
  const drift = isNum(s.first_window) && isNum(s.slope_per_h) ? s : null;
  const driftAt = (t) => drift.first_window + (drift.slope_per_h * t) / 3600;
  const rows = pts.map((p) => (drift ? [p[0], isNum(p[1]) ? p[1] : null, driftAt(p[0])] : [p[0], isNum(p[1]) ? p[1] : null]));
  const tMax = Math.max(pts[pts.length - 1][0], ...hangs);

  const legendFormatter = (d) => {
    if (d.x == null || d.i == null || !rows[d.i]) {
      return legendFragment([h('span', { class: 'pg-legend-hint' }, 'hover for values'), drift ? ['drift', `${fmtPct(s.drift_pct_per_h, 2)}/h`] : null, drift ? ['slope', `${fmtNum(s.slope_per_h)}${unit}/h`] : null]);
    }
    const [t, v, dv] = rows[d.i];
    const parts = [['t', fmtHms(t)], [str(s.metric), `${fmtNum(v)}${unit}`]];
    if (drift) parts.push(['drift line', `${fmtNum(dv)}${unit}`]);
    return legendFragment(parts);
  };

  const g = new Dygraph(c.chart, rows, {
    labels: drift ? ['t', 'value', 'drift'] : ['t', 'value'],
    colors: drift ? ['#1f6feb', '#b7791f'] : ['#1f6feb'],
    strokeWidth: 1,
    series: { drift: { strokeWidth: 2, strokePattern: [7, 4], highlightCircleSize: 0 } },
    labelsDiv: c.legend,
    legend: 'always',
    legendFormatter,
    axisLabelFontSize: 11,
    yAxisLabelWidth: 58,
    gridLineColor: '#e7ebef',
    dateWindow: [0, tMax > 0 ? tMax : 1],
    valueRange: paddedRange(rows.map((x) => x[1]).concat(stallEv.map((e) => e.value))),
    axes: {
      x: { ticker: hmsTicker, axisLabelFormatter: (v) => esc(fmtHms(v)), valueFormatter: (v) => esc(fmtHms(v)) },
      y: { axisLabelFormatter: (v) => esc(fmtAxis(v)), valueFormatter: (v) => esc(fmtNum(v)) },
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
  });
  charts.push(g);
  return true;
}

/* ------------------------------------------------------------------ router */
function pageNotFound(r) {
  const view = h('div', null, h('h1', null, 'Not found'), message('warn', `There is no page "${r.page}". `, h('a', { href: link('overview') }, 'Go to the overview.')));
  return { name: 'notfound', node: view };
}

// The page name comes from the URL: a null-prototype map, so "#/constructor"
// is simply not found.
const PAGES = Object.assign(Object.create(null), { overview: pageOverview, runs: pageRuns, run: pageRun, sweep: pageSweep, trend: pageTrend, soak: pageSoak });

let renderSeq = 0;

// Ready means painted: wait for the next frame (layout and paint of what was
// just inserted happen before it) and then a task. A hidden tab may never
// get a frame, so a timer stands in after 500 ms.
function markReady(seq, name, nCharts) {
  let done = false;
  const finish = () => {
    if (done || seq !== renderSeq) return;
    done = true;
    const ds = document.body.dataset;
    ds.page = name;
    ds.charts = String(nCharts);
    ds.readyMs = String(Math.round(performance.now()));
    ds.ready = '1';
  };
  requestAnimationFrame(() => setTimeout(finish, 0));
  setTimeout(finish, 500);
}

async function route() {
  const seq = ++renderSeq;
  clearTimeout(filterTimer);
  const ds = document.body.dataset;
  ds.ready = '0';
  delete ds.error;
  const r = parseHash();
  const main = $('#pg-main');
  // Keep the caret in a filter box across the re-render it triggers.
  const active = document.activeElement;
  const focus = active && active.id && active.tagName === 'INPUT' ? { id: active.id, a: active.selectionStart, b: active.selectionEnd } : null;
  let out;
  try {
    const index = await need('index');
    if (seq !== renderSeq) return;
    renderChrome(index, r);
    const page = PAGES[r.page] || pageNotFound;
    out = await page(r, index);
  } catch (e) {
    if (seq !== renderSeq) return;
    const name = PAGES[r.page] ? r.page : 'notfound';
    if (e instanceof DataError) {
      ds.error = e.message;
      console.warn('[perfgate]', e.message);
      out = {
        name,
        node: h('div', null, h('h1', null, 'Data not available'), message('error', e.message),
          h('p', { class: 'pg-muted' }, 'The dashboard directory may be incomplete, or the run may be older than the runs it was generated with (perfgate dashboard --runs N).'),
          h('p', null, h('a', { href: link('overview') }, 'Back to the overview.'))),
      };
    } else {
      reportError((e && e.stack) || String(e));
      out = { name, node: message('error', `This page failed to render: ${(e && e.message) || e}`) };
    }
  }
  if (seq !== renderSeq) return;
  destroyCharts();
  main.replaceChildren(out.node);
  document.title = `perfgate — ${out.name}${r.arg ? ` ${r.arg}` : ''}`;
  let n = 0;
  try {
    n = out.draw ? out.draw() : 0;
  } catch (e) {
    reportError((e && e.stack) || String(e));
  }
  if (focus) {
    const el = document.getElementById(focus.id);
    if (el) {
      el.focus();
      try {
        el.setSelectionRange(focus.a, focus.b);
      } catch (e) {
        /* not a text input */
      }
    }
  }
  markReady(seq, out.name, n);
}

function boot() {
  const box = document.getElementById('pg-errors');
  if (box) for (const m of pendingErrors.splice(0)) box.appendChild(document.createTextNode(`${m}\n`));
  window.addEventListener('hashchange', route);
  route();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
else boot();
