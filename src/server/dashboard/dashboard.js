// sluiced's live dashboard. Every value from the feed is attacker-influenced (descriptor values
// come from requests), so it only ever reaches the page as text: textContent and createElement,
// never innerHTML. The server's Content-Security-Policy forbids inline code as a second guard.
'use strict';
(() => {
  const FEED_VERSION = 1;
  let domain = new URLSearchParams(location.search).get('domain') || '';
  let timer = null;

  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = String(text);
    return e;
  };
  const fmt = (n) => n >= 1e6 ? (n / 1e6).toFixed(1) + 'M' : n >= 1e4 ? (n / 1e3).toFixed(1) + 'k' :
      String(Math.round(n * 10) / 10);
  const ago = (ms, now) => {
    const s = Math.max(0, Math.round((now - ms) / 1000));
    return s < 90 ? s + ' s ago' : s < 5400 ? Math.round(s / 60) + ' min ago' :
        Math.round(s / 3600) + ' h ago';
  };
  const us = (v) => v >= 1000 ? (v / 1000).toFixed(v >= 10000 ? 0 : 1) + ' ms' : v + ' µs';

  function select(name) {
    domain = name;
    const url = new URL(location.href);
    if (name) url.searchParams.set('domain', name); else url.searchParams.delete('domain');
    history.replaceState(null, '', url);
    refresh();
  }

  function descriptor(row) {
    const td = el('td');
    for (const e of row.descriptor) {
      const span = el('span', 'entry');
      span.append(el('span', 'k', e.key + '='), el('span', 'v', e.value));
      td.append(span);
    }
    if (row.truncated) td.append(el('span', 'cut', '…(cut)'));
    return td;
  }

  function draw(canvas, total, over) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 300, h = canvas.clientHeight || 70;
    canvas.width = w * dpr; canvas.height = h * dpr;
    const c = canvas.getContext('2d');
    c.scale(dpr, dpr);
    const style = getComputedStyle(document.documentElement);
    const max = Math.max(1, ...total);
    const line = (data, color) => {
      c.beginPath();
      data.forEach((v, i) => {
        const x = data.length > 1 ? i * w / (data.length - 1) : 0, y = h - 2 - (v / max) * (h - 4);
        if (i === 0) c.moveTo(x, y); else c.lineTo(x, y);
      });
      c.strokeStyle = color; c.lineWidth = 1.5; c.stroke();
    };
    line(total, style.getPropertyValue('--accent').trim());
    line(over, style.getPropertyValue('--over').trim());
  }

  function renderDomains(feed) {
    const nav = $('domains');
    const names = ['', ...feed.domains.map((d) => d.name)];
    nav.replaceChildren(...names.map((n) => {
      const b = el('button', '', n || 'all domains');
      b.type = 'button';
      b.setAttribute('aria-pressed', String(n === domain));
      b.addEventListener('click', () => select(n));
      return b;
    }));
    const charts = $('charts');
    const shown = feed.domains.filter((d) => !domain || d.name === domain);
    charts.replaceChildren(...shown.map((d) => {
      const card = el('div', 'chart');
      card.title = 'Show only ' + d.name;
      card.addEventListener('click', () => select(d.name));
      const recent = d.decisions_per_second.slice(-120), over = d.over_limit_per_second.slice(-120);
      const last = (a) => a.length ? a[a.length - 1] : 0;
      const share = d.last_minute_decisions ?
          (100 * d.last_minute_over_limit / d.last_minute_decisions).toFixed(1) : '0.0';
      const figures = el('div', 'figures');
      figures.append(el('div', '', ''), el('div', 'big', fmt(last(recent)) + '/s'),
                     el('div', 'big over', fmt(last(over)) + '/s over'),
                     el('div', 'big over', share + ' %'));
      figures.firstChild.append(el('strong', '', d.name));
      const canvas = el('canvas');
      canvas.setAttribute('aria-label', 'decisions and over-limit per second, last 2 minutes');
      const caption = el('div', 'caption',
          'last 2 min · peak ' + fmt(Math.max(0, ...recent)) + '/s · blue: decisions, red: over limit');
      card.append(figures, canvas, caption);
      requestAnimationFrame(() => draw(canvas, recent, over));
      return card;
    }));
  }

  function renderTables(feed) {
    const denied = $('denied').tBodies[0];
    denied.replaceChildren(...feed.top_over_limit.map((r) => {
      const tr = el('tr');
      tr.append(el('td', '', r.domain), descriptor(r), el('td', 'num', fmt(r.count)),
                el('td', '', r.limit.requests_per_unit + ' / ' + r.limit.unit),
                el('td', '', ago(r.since_ms, feed.now_ms)));
      return tr;
    }));
    $('denied-empty').hidden = feed.top_over_limit.length > 0;
    const callers = $('callers').tBodies[0];
    callers.replaceChildren(...feed.top_callers.map((r) => {
      const tr = el('tr');
      tr.append(el('td', '', r.domain), descriptor(r), el('td', 'num', fmt(r.count)));
      return tr;
    }));
  }

  function renderState(feed) {
    const rows = [];
    const add = (k, v, cls) => rows.push(el('dt', '', k), el('dd', cls || '', v));
    const s = feed.store;
    if (s) {
      add('store', s.kind);
      if (s.connected !== undefined) add('connected', s.connected ? 'yes' : 'no', s.connected ? 'good' : 'bad');
      add('breaker', s.breaker_open ? 'open (store skipped)' : 'closed', s.breaker_open ? 'bad' : 'good');
      if (s.leases) {
        add('answered locally', fmt(s.leases.local_admits + s.leases.local_denials));
        add('leases granted', fmt(s.leases.grants));
      }
    }
    add('latency p50 / p90 / p99',
        us(feed.latency.p50_us) + ' / ' + us(feed.latency.p90_us) + ' / ' + us(feed.latency.p99_us));
    add('config version', String(feed.config.version));
    if (feed.config.origin) add('config', feed.config.origin);
    add('reload errors', String(feed.config.load_errors), feed.config.load_errors ? 'bad' : '');
    if (feed.config.last_error) {
      add('last error', ago(feed.config.last_error_ms, feed.now_ms) + ': ' + feed.config.last_error, 'bad');
    }
    $('state').replaceChildren(...rows);
  }

  async function refresh() {
    clearTimeout(timer);
    const status = $('status');
    try {
      const r = await fetch('/dashboard/feed.json' + (domain ? '?domain=' + encodeURIComponent(domain) : ''),
                            {cache: 'no-store'});
      if (!r.ok) throw new Error('HTTP ' + r.status);
      const feed = await r.json();
      if (feed.version !== FEED_VERSION) throw new Error('feed version ' + feed.version);
      $('feed-version').textContent = String(feed.version);
      renderDomains(feed);
      renderTables(feed);
      renderState(feed);
      status.textContent = 'live · ' + new Date(feed.now_ms).toLocaleTimeString();
      status.classList.remove('bad');
    } catch (e) {
      status.textContent = 'feed unavailable (' + e.message + '), retrying';
      status.classList.add('bad');
    }
    timer = setTimeout(refresh, 1000);
  }

  document.addEventListener('DOMContentLoaded', refresh);
})();
