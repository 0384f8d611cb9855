/* perfgate dashboard front-end (docs/dashboard.md is the contract).
 *
 * Plain ES2020, no build step, no framework; Dygraph is the only library.
 * The page is opened from file://, so data arrives as <script src="data/<key>.js">
 * files that call PG.receive(key, object) -- fetch()/XHR are refused there.
 *
 * Security rule for every one of these files: every string that comes from data (suite and
 * workload names, labels, parameter values, errors, notes, paths, env...)
 * enters the DOM through textContent / createTextNode / setAttribute on
 * non-executable attributes. Nothing here assigns innerHTML. The two places
 * where Dygraph itself uses innerHTML (axis tick labels, legend) are fed either
 * esc()-ed text or a DocumentFragment built with text nodes.
 *
 * The app is split into classic scripts that index.html loads in this order
 * and that share one global scope (ES modules do not load from file://):
 *   pg-core.js: the shared base: errors, data loading, DOM helpers, formatting, badges, routing links
 *   pg-table.js: tables, key-value tables, forms and parameter helpers
 *   pg-chart.js: chart helpers over Dygraph: cards, legends, tickers, overlays drawn on the canvas
 *   pg-chrome.js: the page chrome: header, navigation, run and suite lookups
 *   pg-page-overview.js: page #/overview
 *   pg-page-runs.js: page #/runs
 *   pg-page-run.js: page #/run/<id> and its gate section
 *   pg-page-sweep.js: page #/sweep/<run> and its heatmap
 *   pg-page-trend.js: page #/trend/<suite> and its charts
 *   pg-page-soak.js: page #/soak/<run> and its charts
 *   pg-main.js: the router and boot: loaded last, it starts the page
 * Only pg-main.js runs anything at load time beyond definitions and the
 * error handlers below.
 */
'use strict';

/* ------------------------------------------------------------------ errors */
// Installed first so that anything failing later is visible to people (the
// red box) and to tests (#pg-errors in --dump-dom output, console).
const pendingErrors = [];
function reportError(msg) {
  console.error('[perfgate]', msg);
  const box = document.getElementById('pg-errors');
  if (box)
    box.appendChild(document.createTextNode(String(msg) + '\n'));
  else
    pendingErrors.push(String(msg));
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
  receive(key, obj) { PG.data[String(key)] = obj; },
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
      if (key in PG.data)
        resolve(PG.data[key]);
      else
        reject(new DataError(`data/${key}.js loaded but did not call PG.receive("${
            key}", …) (a syntax error in it, or the wrong key).`));
    };
    s.onerror = () => reject(new DataError(`data/${key}.js could not be loaded: the file is missing or unreadable.`));
    document.head.appendChild(s);
  });
  loads.set(key, p);
  p.catch(() => loads.delete(key));  // allow a retry on the next navigation
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
      if (k === 'class')
        e.className = v;
      else if (k === 'text')
        e.textContent = String(v);
      else if (k === 'style')
        e.style.cssText = v;  // only literal styles from this file
      else if (k.startsWith('on')) {
        // Handlers only as functions: an "on…" attribute from a string would be code.
        if (typeof v === 'function') e.addEventListener(k.slice(2), v);
      } else if (k === 'href')
        e.setAttribute('href', safeHref(v));
      else
        e.setAttribute(k, v === true ? '' : String(v));
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
  if (a >= 1e10) return `${+ (v / 1e9).toPrecision(5)}G`;
  if (a >= 1e7) return `${+ (v / 1e6).toPrecision(5)}M`;
  return String(+v.toPrecision(7));
}

function fmtPct(v, digits = 1) {
  if (!isNum(v)) return DASH;
  return `${v > 0 ? '+' : ''}${v.toFixed(digits)}%`;
}

// cv is a fraction (0.012 -> "1.2%"), as perfgate's tables print it.
function fmtCv(v) { return isNum(v) ? `${(v * 100).toFixed(1)}%` : DASH; }

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

function shortCommit(c) { return c ? String(c).slice(0, 10) : DASH; }

function plural(n, word) { return `${n} ${word}${n === 1 ? '' : 's'}`; }

function str(v) { return v == null ? '' : String(v); }

function tagsOf(r) {
  if (Array.isArray(r.tags)) return r.tags.map(String);
  if (typeof r.tags === 'string' && r.tags) return r.tags.split(',').map((s) => s.trim()).filter(Boolean);
  return [];
}

/* ------------------------------------------------------------------ colours / badges */
const TONE = {
  ok: 'green',
  completed: 'green',
  pass: 'green',
  improvement: 'green',
  failed: 'red',
  timed_out: 'red',
  regression: 'red',
  hang: 'red',
  no_steps: 'red',
  nan_loss: 'red',
  interrupted: 'amber',
  inconclusive: 'amber',
  missing: 'amber',
  staircase: 'amber',
  stalls: 'amber',
  memory_growth: 'amber',
  drift: 'amber',
  jitter: 'grey',
  unchanged: 'grey',
  running: 'blue',
  soak: 'blue',
  import: 'grey',
  run: 'grey',
};
const VERDICT_ORDER = ['regression', 'failed', 'missing', 'inconclusive', 'improvement', 'unchanged'];

function badge(kind, text, solid) {
  const k = str(kind);
  const tone = Object.prototype.hasOwnProperty.call(TONE, k) ? TONE[k] : 'grey';
  return h('span', {class: `pg-badge ${tone}${solid ? ' solid' : ''}`}, text == null ? k || DASH : text);
}

const SHORT_VERDICT = {
  regression: 'regr',
  failed: 'fail',
  missing: 'miss',
  inconclusive: 'inconcl',
  improvement: 'impr',
  unchanged: 'same'
};

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
  return out.length ? out : h('span', {class: 'pg-muted'}, 'no comparisons');
}

function gateCell(gate, compact) {
  if (!gate) return h('span', {class: 'pg-muted'}, 'not gated');
  return h(
      'span', {title: gate.baseline ? `gate #${str(gate.id)} against ${gate.baseline}` : null},
      badge(gate.outcome, str(gate.outcome) || DASH, true), ' ', countBadges(gate.counts, compact));
}

// Colour a relative change by whether it is good for this metric.
function changeSpan(pct, better, regression) {
  const t = fmtPct(pct);
  if (!isNum(pct)) return t;
  let bad = regression;
  if (bad == null) {
    if (better === 'lower')
      bad = pct > 0;
    else if (better === 'higher')
      bad = pct < 0;
    else
      return t;
  }
  return h('span', {class: bad ? 'pg-change-bad' : 'pg-change-good'}, t);
}

/* ------------------------------------------------------------------ routing */
// #/<page>/<arg>?k=v&k=v ; every component percent-encoded (encodeURIComponent).
// '+' is a literal plus, not a space: the generator must write spaces as %20.
function dec(s) {
  try {
    return decodeURIComponent(s);
  } catch (e) {
    return s;  // a malformed escape: show the raw text rather than failing
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
  return {page: dec(seg[0] || '') || 'overview', arg: seg.length > 1 ? dec(seg.slice(1).join('/')) : '', q};
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

const runLink = (id, text) => h('a', {href: link('run', id)}, text == null ? `#${id}` : text);
const trendLink = (suite, q, text) => h('a', {href: link('trend', suite, q)}, text);
