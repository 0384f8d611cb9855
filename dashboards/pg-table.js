/* perfgate dashboard: tables, key-value tables, forms and parameter helpers.
 * One of the classic scripts index.html loads in order (ES modules do not
 * load from file://); they share one global scope. The rules of pg-core.js's
 * header hold here. */
'use strict';

/* ------------------------------------------------------------------ tables */
// cols: [{h: header, v: row => sort value, f: row => display (string|Node|array), cls, title}]
// Tables are filled through a DocumentFragment (one DOM insertion), and
// sortable by clicking a header unless opts.sort === false.
const TABLE_PAGE = 200;

function table(cols, rows, opts = {}) {
  const tbody = h('tbody');
  const ths = cols.map(
      (c) =>
          h('th',
            {class: [c.cls, opts.sort === false || !c.v ? '' : 'pg-sortable'].join(' ').trim() || null, title: c.title},
            c.h));
  // Long tables show their first rows and a button for the rest: laying out
  // a thousand rows costs more than the rest of the page together.
  let limit = opts.limit || TABLE_PAGE;
  let current = rows;
  const fill = (rs) => {
    current = rs;
    const frag = document.createDocumentFragment();
    if (!rs.length) {
      frag.appendChild(h('tr', null, h('td', {class: 'pg-empty', colspan: cols.length}, opts.empty || 'none')));
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
        if (v == null || (typeof v === 'number' && !Number.isFinite(v)))
          v = DASH;
        else if (typeof v === 'number')
          v = fmtNum(v);
        append(td, [v]);
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    }
    if (rs.length > limit) {
      const more = h('button', {type: 'button', class: 'pg-button'}, `show all ${rs.length} rows`);
      more.addEventListener('click', () => {
        limit = Infinity;
        fill(current);
      });
      frag.appendChild(
          h('tr', {class: 'pg-more-row'},
            h('td', {colspan: cols.length}, `${limit} of ${rs.length} rows shown · `, more)));
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
  return h(
      'div', {class: 'pg-table-wrap'},
      h('table', {class: `pg-table ${opts.cls || ''}`}, h('thead', null, h('tr', null, ths)), tbody));
}

// Numbers numerically, nulls last, strings naturally ("bucket_mb=5" < "bucket_mb=25").
const collator = new Intl.Collator('en', {numeric: true, sensitivity: 'base'});
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
        {h: 'key', f: (r) => r[0]},
        {
          h: 'value',
          f: (r) =>
              (r[1] !== null && typeof r[1] === 'object' ? JSON.stringify(r[1], null, 1) :
                   r[1] == null                          ? DASH :
                                                           String(r[1]))
        },
      ],
      rows,
      {cls: 'pg-kv', sort: false, empty: 'nothing recorded'},
  );
}

// A muted line of items separated by " · " (CSS adds the separators
// between elements, so bare strings are wrapped in spans).
function subline(...items) {
  const d = h('div', {class: 'pg-sub'});
  for (const it of items.flat()) {
    if (it == null || it === false || it === '') continue;
    d.appendChild(it instanceof Node ? it : h('span', null, String(it)));
  }
  return d;
}

function message(kind, ...text) { return h('div', {class: `pg-message pg-message-${kind}`}, ...text); }

function select(labelText, id, options, value, onchange) {
  // options: [[value, text]]
  const s = h('select', {id, onchange: (e) => onchange(e.target.value)});
  for (const [v, t] of options) {
    const o = h('option', {value: v}, t);
    if (v === value) o.selected = true;
    s.appendChild(o);
  }
  return h('label', { for: id
  }, labelText, s);
}

// A text filter that updates the URL without piling up history entries and
// re-renders after a short pause in typing.
let filterTimer = 0;
function filterInput(labelText, id, value, placeholder, makeHash) {
  const input = h('input', {type: 'search', id, value, placeholder, autocomplete: 'off', spellcheck: 'false'});
  input.addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      history.replaceState(null, '', makeHash(input.value));
      route();
    }, 250);
  });
  return h('label', { for: id
  }, labelText, input);
}

function go(hash) {
  if (location.hash === hash)
    route();
  else
    location.hash = hash;
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
    if (cur && typeof cur === 'object' && Object.prototype.hasOwnProperty.call(cur, part))
      cur = cur[part];
    else
      return undefined;
  }
  return cur;
}

function paramText(v) {
  if (v === undefined) return '(unset)';
  if (v !== null && typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
