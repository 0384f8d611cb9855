/* perfgate dashboard: the page chrome: header, navigation, run and suite lookups.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ chrome */
function renderChrome(index, r) {
  const nav = $('#pg-nav');
  const items = [];
  const add = (href, text, active, title) => items.push(h('a', {href, class: active ? 'active' : null, title}, text));
  add(link('overview'), 'Overview', r.page === 'overview');
  add(link('runs'), 'Runs', r.page === 'runs');
  items.push(h('span', {class: 'pg-sep'}));
  items.push(h('span', {class: 'pg-nav-label'}, 'Trends:'));
  // Suites of soaks only have no trend: their runs are judged on the soak page.
  const suites = (index.suites || []).filter((s) => s.trend);
  if (suites.length <= 8) {
    for (const s of suites)
      add(link('trend', s.name), str(s.name), r.page === 'trend' && r.arg === s.name, str(s.name));
  } else {
    // Many suites: a select keeps the header one line high.
    const cur = r.page === 'trend' ? r.arg : '';
    const sel =
        h('select', {
          id: 'pg-nav-trend',
          'aria-label': 'trend of suite',
          onchange: (e) => e.target.value && go(link('trend', e.target.value))
        },
          h('option', {value: ''}, '(choose a suite)'));
    for (const s of suites) {
      const o = h('option', {value: str(s.name)}, str(s.name));
      if (s.name === cur) o.selected = true;
      sel.appendChild(o);
    }
    items.push(sel);
  }
  nav.replaceChildren(...items);
  const meta = $('#pg-meta');
  meta.replaceChildren(
      h('span', null, `generated ${fmtTime(index.generated_at)}`),
      h('span', {title: 'database'}, `db ${str(index.db) || DASH}`),
      index.perfgate_version ? h('span', null, `perfgate ${index.perfgate_version}`) : null,
  );
}

function runById(index, id) { return (index.runs || []).find((r) => String(r.id) === String(id)); }

function suiteByName(index, name) { return (index.suites || []).find((s) => s.name === name); }
