/* perfgate dashboard: the router and boot: loaded last, it starts the page.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ router */
function pageNotFound(r) {
  const view =
      h('div', null, h('h1', null, 'Not found'),
        message('warn', `There is no page "${r.page}". `, h('a', {href: link('overview')}, 'Go to the overview.')));
  return {name: 'notfound', node: view};
}

// The page name comes from the URL: a null-prototype map, so "#/constructor"
// is simply not found.
const PAGES = Object.assign(
    Object.create(null),
    {overview: pageOverview, runs: pageRuns, run: pageRun, sweep: pageSweep, trend: pageTrend, soak: pageSoak});

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
  const focus = active && active.id && active.tagName === 'INPUT' ?
      {id: active.id, a: active.selectionStart, b: active.selectionEnd} :
      null;
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
        node: h(
            'div', null, h('h1', null, 'Data not available'), message('error', e.message),
            h('p', {class: 'pg-muted'},
              'The dashboard directory may be incomplete, or the run may be older than the runs it was generated with (perfgate dashboard --runs N).'),
            h('p', null, h('a', {href: link('overview')}, 'Back to the overview.'))),
      };
    } else {
      reportError((e && e.stack) || String(e));
      out = {name, node: message('error', `This page failed to render: ${(e && e.message) || e}`)};
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
  if (box)
    for (const m of pendingErrors.splice(0)) box.appendChild(document.createTextNode(`${m}\n`));
  window.addEventListener('hashchange', route);
  route();
}

if (document.readyState === 'loading')
  document.addEventListener('DOMContentLoaded', boot);
else
  boot();
